//! Structured logs with `tracing`. `RUST_LOG` filters; `STRAD_LOG_FORMAT=json` switches to
//! one JSON object per line.

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        // rmcp logs every notification and every new session at info, with its Debug form.
        EnvFilter::new("info,sqlx=warn,tower_sessions=warn,tower_sessions_core=warn,rmcp=warn")
    });
    let json = std::env::var("STRAD_LOG_FORMAT").is_ok_and(|v| v == "json");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
