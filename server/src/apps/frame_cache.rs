//! Pinned apps prepared for the frame route, in memory: the bytes as served, their CSP and
//! their brotli and gzip encodings, each valid for one version of its pin row.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak, mpsc};

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// A pinned app ready to serve: the bytes with `<base target>`, and their CSP.
pub struct PreparedFrame {
    body: Bytes,
    csp: HeaderValue,
    /// What the cache knows it by (`key_of` its policy and bytes).
    key: Key,
    /// The body compressed, set once by `compress` off the request path; until then every
    /// load is sent as it is.
    encoded: OnceLock<Encoded>,
}

struct Encoded {
    br: Bytes,
    gzip: Bytes,
}

/// brotli's quality and window for an app, once per distinct app. Measured on a 427 KiB
/// example app: quality 6 is 1.5% larger than 9 in a third of the time (22 ms) and a fifth
/// of the working memory (about 7 MB against 38 MB); a 1 MiB window holds any app of that
/// size whole.
const BROTLI_QUALITY: u32 = 6;
const BROTLI_WINDOW: u32 = 20;

impl PreparedFrame {
    /// Compresses the body, once (blocking: tens of milliseconds for a large app).
    pub(super) fn compress(&self) {
        if self.encoded.get().is_some() {
            return;
        }
        let mut br = Vec::with_capacity(self.body.len() / 3);
        {
            let params = brotli::enc::BrotliEncoderParams {
                quality: BROTLI_QUALITY as i32,
                lgwin: BROTLI_WINDOW as i32,
                size_hint: self.body.len(),
                ..Default::default()
            };
            let mut input = &self.body[..];
            if brotli::BrotliCompress(&mut input, &mut br, &params).is_err() {
                return;
            }
        }
        let mut gzip = flate2::write::GzEncoder::new(
            Vec::with_capacity(self.body.len() / 3),
            flate2::Compression::best(),
        );
        let gzip = match std::io::Write::write_all(&mut gzip, &self.body) {
            Ok(()) => match gzip.finish() {
                Ok(bytes) => bytes,
                Err(_) => return,
            },
            Err(_) => return,
        };
        let _ = self.encoded.set(Encoded {
            br: br.into(),
            gzip: gzip.into(),
        });
    }

    /// The frame's response to a request with `request`'s `Accept-Encoding`: brotli or gzip
    /// once compressed and accepted, else the bytes as they are. On the sandbox origin the
    /// CSP's `frame-ancestors` alone names the console (`X-Frame-Options` cannot name
    /// another origin).
    pub(super) fn response(&self, on_sandbox: bool, request: &HeaderMap) -> Response {
        let accept = request
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let (body, coding) = match self.encoded.get() {
            Some(encoded) if accepts(accept, "br") => (encoded.br.clone(), Some("br")),
            Some(encoded) if accepts(accept, "gzip") => (encoded.gzip.clone(), Some("gzip")),
            _ => (self.body.clone(), None),
        };
        let mut response = body.into_response();
        let h = response.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        if let Some(coding) = coding {
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
        }
        h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        h.insert(header::CONTENT_SECURITY_POLICY, self.csp.clone());
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        // Framed by the console only (the CSP's frame-ancestors says the same).
        if !on_sandbox {
            h.insert(
                header::X_FRAME_OPTIONS,
                HeaderValue::from_static("SAMEORIGIN"),
            );
        }
        response
    }
}

/// Whether an `Accept-Encoding` value accepts `coding`: named, or by `*`, with a weight
/// above zero (RFC 9110 §12.5.3); a named entry decides over `*`.
fn accepts(accept: &str, coding: &str) -> bool {
    let mut any = false;
    for entry in accept.split(',') {
        let mut parts = entry.split(';');
        let name = parts.next().unwrap_or("").trim();
        let weighed = parts
            .filter_map(|p| p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")))
            .next_back()
            .map(|q| q.trim().parse::<f32>().is_ok_and(|q| q > 0.0))
            .unwrap_or(true);
        if name.eq_ignore_ascii_case(coding) {
            return weighed;
        }
        if name == "*" {
            any = weighed;
        }
    }
    any
}

/// Prepared frames by (person, server, resource), each valid for one version of its pin row
/// (Postgres' `xmin`: any write to the row, a refresh or a tampering, makes a new one). The
/// frames themselves are kept once per distinct bytes and policy, however many people have
/// pinned the same copy, and compressed once. Bounded by bytes; past it, everything is
/// dropped and prepared again on demand.
#[derive(Default)]
pub struct FrameCache {
    held: Mutex<Held>,
    /// The compressing thread's inbox, started with the first frame to compress. It holds
    /// frames weakly: one the cache has dropped meanwhile is freed, not compressed.
    compressor: OnceLock<mpsc::Sender<Weak<PreparedFrame>>>,
}

#[derive(Default)]
struct Held {
    /// (person, server, resource) → (the pin row's version, the frame prepared from it).
    by_pin: HashMap<(uuid::Uuid, String, String), (String, Key)>,
    frames: HashMap<Key, Arc<PreparedFrame>>,
    /// The frames' bodies, each counted twice (with its encodings, which are smaller).
    bytes: usize,
}

/// SHA-256 of a frame's policy and bytes.
type Key = [u8; 32];

const FRAME_CACHE_BYTES: usize = 64 * 1024 * 1024;

impl FrameCache {
    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Compresses `frame` off the request path, on one thread kept for it: frames new at
    /// once wait their turn rather than take a blocking thread each. After each frame that
    /// thread hands the compressors' working memory (several MB for brotli) back to the
    /// system: mimalloc would otherwise keep it resident for the thread, idle until the
    /// next new frame (docs/benchmarks.md, memory). The thread ends with the cache.
    pub(super) fn compress_later(&self, frame: &Arc<PreparedFrame>) {
        let inbox = self.compressor.get_or_init(|| {
            let (inbox, frames) = mpsc::channel::<Weak<PreparedFrame>>();
            let started = std::thread::Builder::new()
                .name("strad-compress".into())
                .spawn(move || {
                    for frame in frames {
                        if let Some(frame) = frame.upgrade() {
                            frame.compress();
                        }
                        crate::release_freed_memory();
                    }
                });
            if let Err(error) = started {
                tracing::warn!(%error, "frames will be sent uncompressed: no thread to compress them");
            }
            inbox
        });
        // Fails only when the thread could not start: the frame is then sent as it is.
        let _ = inbox.send(Arc::downgrade(frame));
    }

    pub(super) fn get(
        &self,
        user: uuid::Uuid,
        slug: &str,
        uri: &str,
        version: &str,
    ) -> Option<Arc<PreparedFrame>> {
        let held = self.held();
        let (_, key) = held
            .by_pin
            .get(&(user, slug.to_owned(), uri.to_owned()))
            .filter(|(v, _)| v == version)?;
        held.frames.get(key).cloned()
    }

    /// The frame of `body` under `csp`: the one kept already, or a new one, which the caller
    /// hands to `compress_later` when told it is new.
    pub(super) fn prepare(&self, body: Bytes, csp: HeaderValue) -> (Arc<PreparedFrame>, bool) {
        let key = key_of(&body, &csp);
        let mut held = self.held();
        if let Some(kept) = held.frames.get(&key) {
            return (kept.clone(), false);
        }
        let size = 2 * body.len();
        if held.bytes + size > FRAME_CACHE_BYTES {
            *held = Held::default();
        }
        let prepared = Arc::new(PreparedFrame {
            body,
            csp,
            key,
            encoded: OnceLock::new(),
        });
        held.frames.insert(key, prepared.clone());
        held.bytes += size;
        (prepared, true)
    }

    /// Remembers that the pin row at `version` serves `prepared` (from `prepare`).
    pub(super) fn put(
        &self,
        user: uuid::Uuid,
        slug: &str,
        uri: &str,
        version: String,
        prepared: &PreparedFrame,
    ) {
        let mut held = self.held();
        if held.frames.contains_key(&prepared.key) {
            held.by_pin.insert(
                (user, slug.to_owned(), uri.to_owned()),
                (version, prepared.key),
            );
        }
    }
}

fn key_of(body: &[u8], csp: &HeaderValue) -> Key {
    let mut hash = Sha256::new();
    hash.update(csp.as_bytes());
    hash.update([0]);
    hash.update(body);
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn accept_encoding_is_read_with_its_weights() {
        assert!(accepts("gzip, deflate, br, zstd", "br"));
        assert!(accepts("gzip, deflate, br", "gzip"));
        assert!(accepts("GZIP", "gzip"));
        assert!(!accepts("", "gzip"));
        assert!(!accepts("identity", "br"));
        assert!(!accepts("br;q=0, gzip", "br"));
        assert!(!accepts("br; q=0.0", "br"));
        assert!(accepts("br;q=0.5", "br"));
        assert!(accepts("*", "br"));
        assert!(!accepts("*;q=0", "gzip"));
        assert!(!accepts("*, gzip;q=0", "gzip"));
        assert!(accepts("gzip;q=1, *;q=0", "gzip"));
        assert!(!accepts("br;q=nonsense", "br"));
    }

    fn frame_cache_with(body: &str) -> (FrameCache, Arc<PreparedFrame>) {
        let cache = FrameCache::default();
        let (prepared, new) = cache.prepare(
            Bytes::from(body.to_owned()),
            HeaderValue::from_static("default-src 'none'"),
        );
        assert!(new);
        (cache, prepared)
    }

    fn request(accept: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(accept).unwrap(),
        );
        headers
    }

    async fn body_of(response: Response) -> Vec<u8> {
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec()
    }

    #[tokio::test]
    async fn a_frame_is_sent_as_it_is_until_compressed_then_in_the_coding_accepted() {
        let app = "<!doctype html><script>let x = 1;</script>".repeat(500);
        let (_, prepared) = frame_cache_with(&app);
        let before = prepared.response(true, &request("gzip, br"));
        assert!(before.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(body_of(before).await, app.as_bytes());

        prepared.compress();
        let br = prepared.response(true, &request("gzip, deflate, br"));
        assert_eq!(br.headers()[header::CONTENT_ENCODING], "br");
        assert_eq!(br.headers()[header::VARY], "accept-encoding");
        assert_eq!(
            br.headers()[header::CONTENT_SECURITY_POLICY],
            "default-src 'none'"
        );
        let sent = body_of(br).await;
        assert!(sent.len() < app.len() / 10);
        let mut decoded = Vec::new();
        brotli::Decompressor::new(&sent[..], 4096)
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, app.as_bytes());

        let gzip = prepared.response(true, &request("gzip"));
        assert_eq!(gzip.headers()[header::CONTENT_ENCODING], "gzip");
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(&body_of(gzip).await[..])
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, app.as_bytes());

        let plain = prepared.response(false, &HeaderMap::new());
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(plain.headers()[header::X_FRAME_OPTIONS], "SAMEORIGIN");
        assert_eq!(body_of(plain).await, app.as_bytes());
    }

    #[test]
    fn frames_handed_to_the_compressor_are_each_compressed_in_turn() {
        let cache = FrameCache::default();
        let frames: Vec<_> = (0..3)
            .map(|n| {
                let app = format!("<!doctype html><p>app {n}</p>").repeat(200);
                let (prepared, new) = cache.prepare(
                    Bytes::from(app),
                    HeaderValue::from_static("default-src 'none'"),
                );
                assert!(new);
                cache.compress_later(&prepared);
                prepared
            })
            .collect();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while frames.iter().any(|f| f.encoded.get().is_none()) {
            assert!(
                std::time::Instant::now() < deadline,
                "not compressed in 10 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let sent = frames[2].response(true, &request("br"));
        assert_eq!(sent.headers()[header::CONTENT_ENCODING], "br");
    }

    #[test]
    fn one_copy_is_kept_for_everyone_who_pinned_it_and_each_pin_version_finds_it() {
        let (cache, prepared) = frame_cache_with("<p>one app</p>");
        let (alice, bob) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
        let (again, new) = cache.prepare(
            Bytes::from_static(b"<p>one app</p>"),
            HeaderValue::from_static("default-src 'none'"),
        );
        assert!(!new);
        assert!(Arc::ptr_eq(&again, &prepared));
        cache.put(alice, "s", "ui://a", "1".into(), &prepared);
        cache.put(bob, "s", "ui://a", "7".into(), &again);
        assert!(Arc::ptr_eq(
            &cache.get(alice, "s", "ui://a", "1").unwrap(),
            &prepared
        ));
        assert!(Arc::ptr_eq(
            &cache.get(bob, "s", "ui://a", "7").unwrap(),
            &prepared
        ));
        assert!(cache.get(alice, "s", "ui://a", "2").is_none());
        assert!(cache.get(alice, "s", "ui://b", "1").is_none());
        // Another policy over the same bytes is another frame.
        let (other, new) = cache.prepare(
            Bytes::from_static(b"<p>one app</p>"),
            HeaderValue::from_static("default-src 'self'"),
        );
        assert!(new);
        assert!(!Arc::ptr_eq(&other, &prepared));
    }
}
