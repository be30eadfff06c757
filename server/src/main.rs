#![forbid(unsafe_code)]

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
    match command {
        // A child of the console on stdio: it needs no configuration.
        Command::DemoServer => strad_server::demo::serve_stdio().await,
        Command::Serve => {
            let app = Application::build(load_config()).await?;
            app.run_until_stopped().await?;
            Ok(())
        }
        Command::AuditVerify => match cli::run_audit_verify(&load_config()).await {
            Ok(code) => std::process::exit(code),
            Err(err) => {
                eprintln!("strad audit verify: {err:#}");
                std::process::exit(2);
            }
        },
    }
}

/// The configuration, or exit 2 with the reason.
fn load_config() -> Config {
    Config::load().unwrap_or_else(|err| {
        eprintln!("strad cannot start: {err}");
        std::process::exit(2);
    })
}
