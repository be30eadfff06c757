use strad_server::config::Config;
use strad_server::startup::Application;
use strad_server::telemetry;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init();
    let config = match Config::load() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("strad cannot start: {err}");
            std::process::exit(2);
        }
    };
    let app = Application::build(config).await?;
    app.run_until_stopped().await?;
    Ok(())
}
