//! JSON as the console reads it, in one place: every text is parsed as bytes.
//!
//! serde_json's parser is generic over its input, so each way of reading (`from_str`,
//! `from_slice`) is a copy of the parser in the wasm, and each type read is a copy of its
//! visitor per way. Server functions' answers are read with `from_slice` (server_fn's
//! `JsonEncoding`); reading the pages' resources and the apps' messages the same way keeps
//! one copy of each (the app page's wasm is 7 KB smaller gzipped for it).

use leptos::prelude::Resource;
use leptos::server::codee::{Decoder, Encoder};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Parses JSON text.
pub fn parse<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    serde_json::from_slice(text.as_bytes())
}

/// The codec of the console's resources: JSON, read by [`parse`].
pub struct Json;

impl<T: Serialize> Encoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &T) -> Result<String, serde_json::Error> {
        serde_json::to_string(value)
    }
}

impl<T: DeserializeOwned> Decoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(text: &str) -> Result<T, serde_json::Error> {
        parse(text)
    }
}

/// A page's data: loaded on the server before the page is sent, read from the page when it
/// hydrates, loaded again in the browser when `source` changes.
pub type Loaded<T> = Resource<T, Json>;

/// A blocking resource ([`Resource::new_blocking`]) whose value is read by [`parse`].
#[track_caller]
pub fn load<T, S, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Loaded<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    S: Send + Sync + Clone + PartialEq + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_it_writes() {
        let value = serde_json::json!({ "a": [1, "two", null], "b": { "c": true } });
        let text = <Json as Encoder<serde_json::Value>>::encode(&value).unwrap();
        let back: serde_json::Value = <Json as Decoder<_>>::decode(&text).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn refuses_what_is_not_json() {
        assert!(parse::<serde_json::Value>("{\"a\":").is_err());
        assert!(parse::<serde_json::Value>("[1] 2").is_err());
    }
}
