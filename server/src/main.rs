use strad_server::cli::{self, Command};
use strad_server::config::Config;
use strad_server::startup::Application;
use strad_server::telemetry;

fn main() -> anyhow::Result<()> {
    strad_server::runtime::build("strad-server")?.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    telemetry::init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = Command::parse(&args) else {
        eprintln!("{}", cli::USAGE);
        std::process::exit(2);
    };
    let config = match Config::load() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("strad cannot start: {err}");
            std::process::exit(2);
        }
    };
    match command {
        Command::Serve => {
            let app = Application::build(config).await?;
            app.run_until_stopped().await?;
            Ok(())
        }
        Command::AuditVerify => match cli::run_audit_verify(&config).await {
            Ok(code) => std::process::exit(code),
            Err(err) => {
                eprintln!("strad audit verify: {err:#}");
                std::process::exit(2);
            }
        },
    }
}
