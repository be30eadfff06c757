//! `[http]`: the address strad listens on and the origin people reach it at.

use std::net::{IpAddr, SocketAddr};

use serde::Deserialize;
use url::Url;

use super::environment::Environment;
use super::{ConfigError, bad};

pub const DEFAULT_BIND: &str = "127.0.0.1:3000";

pub(super) const S_BIND: &str = "STRAD_BIND (http.bind)";
pub(super) const S_PUBLIC_URL: &str = "STRAD_PUBLIC_URL (http.public_url)";
pub(super) const S_INSTANCE: &str = "STRAD_INSTANCE (http.instance)";

#[derive(Clone, Debug)]
pub struct HttpConfig {
    pub bind: SocketAddr,
    /// The origin people reach the console at; sign-in redirects and cookie `Secure` follow
    /// it. Always scheme + host (+ port), no path.
    pub public_url: Url,
    /// Where app frames are served from when not the console's origin (`config::sandbox`).
    pub sandbox_origin: Option<Url>,
    /// This instance's name among several (`STRAD_INSTANCE`): the prefix of the `/mcp`
    /// session ids it hands out, which a load balancer routes on.
    pub instance: Option<String>,
}

impl HttpConfig {
    pub fn is_https(&self) -> bool {
        self.public_url.scheme() == "https"
    }

    /// `scheme://host[:port]`, as browsers send it in `Origin`.
    pub fn public_origin(&self) -> String {
        self.public_url.origin().ascii_serialization()
    }

    /// The sandbox origin as `scheme://host[:port]`, when frames are served from one.
    pub fn sandbox(&self) -> Option<String> {
        self.sandbox_origin
            .as_ref()
            .map(|url| url.origin().ascii_serialization())
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileHttp {
    bind: Option<String>,
    public_url: Option<String>,
    instance: Option<String>,
    /// Read by `config::sandbox`, once the sign-in mode is known.
    pub(super) sandbox_origin: Option<String>,
}

pub(super) fn load(file: FileHttp, env: &Environment) -> Result<HttpConfig, ConfigError> {
    let bind_raw = env
        .var("STRAD_BIND")
        .or(file.bind)
        .or_else(|| env.var("LEPTOS_SITE_ADDR"))
        .unwrap_or_else(|| DEFAULT_BIND.into());
    let bind: SocketAddr = bind_raw.parse().map_err(|_| {
        bad(
            S_BIND,
            format!("`{bind_raw}` is not an address like 127.0.0.1:3000"),
        )
    })?;

    let public_url = match env.var("STRAD_PUBLIC_URL").or(file.public_url) {
        Some(raw) => parse_public_url(&raw)?,
        None if bind.ip().is_unspecified() => {
            return Err(bad(S_PUBLIC_URL, "required when binding every interface"));
        }
        None => parse_public_url(&format!("http://{bind}"))?,
    };
    let instance = env.var("STRAD_INSTANCE").or(file.instance);
    if let Some(name) = &instance
        && !is_instance_name(name)
    {
        return Err(bad(
            S_INSTANCE,
            format!("`{name}` is not 1–32 of a-z, 0-9 and -"),
        ));
    }
    Ok(HttpConfig {
        bind,
        public_url,
        sandbox_origin: None,
        instance,
    })
}

/// An instance name: it starts `/mcp` session ids, so it is plain and short.
fn is_instance_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn parse_public_url(raw: &str) -> Result<Url, ConfigError> {
    let url = Url::parse(raw).map_err(|_| bad(S_PUBLIC_URL, format!("`{raw}` is not a URL")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(S_PUBLIC_URL, "must be http:// or https://"));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(bad(
            S_PUBLIC_URL,
            "must be an origin only, without path, query or fragment",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(S_PUBLIC_URL, "must not carry credentials"));
    }
    Ok(url)
}

pub(super) fn is_loopback_host(host: &str) -> bool {
    if host == "localhost" {
        return true;
    }
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}
