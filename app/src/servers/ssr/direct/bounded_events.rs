//! An event stream held to a byte limit per event.

use futures::StreamExt;

/// A byte stream that fails once more than `limit` bytes came since the last blank line,
/// so one event can never grow past the limit in the parser's buffer.
pub(super) struct Bounded<S> {
    inner: S,
    limit: usize,
    since_blank: usize,
    /// The last two bytes seen, to find a blank line split across chunks.
    tail: [u8; 2],
}

pub(super) const TOO_LARGE: &str = "an event larger than the limit";

impl<S> Bounded<S> {
    pub(super) fn new(inner: S, limit: usize) -> Self {
        Self {
            inner,
            limit,
            since_blank: 0,
            tail: [0, 0],
        }
    }

    /// Counts `chunk`; false once an event has outgrown the limit.
    fn count(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            let blank = byte == b'\n' && (self.tail[1] == b'\n' || self.tail == *b"\n\r")
                || byte == b'\r' && self.tail[1] == b'\r';
            self.tail = [self.tail[1], byte];
            self.since_blank = if blank { 0 } else { self.since_blank + 1 };
            if self.since_blank > self.limit {
                return false;
            }
        }
        true
    }
}

impl<S, D, E> futures::Stream for Bounded<S>
where
    S: futures::Stream<Item = Result<D, E>> + Unpin,
    D: AsRef<[u8]>,
    E: std::error::Error + Send + Sync + 'static,
{
    type Item = Result<D, std::io::Error>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = self.get_mut();
        this.inner.poll_next_unpin(cx).map(|item| {
            item.map(|chunk| match chunk {
                Ok(chunk) if this.count(chunk.as_ref()) => Ok(chunk),
                Ok(_) => Err(std::io::Error::other(TOO_LARGE)),
                Err(err) => Err(std::io::Error::other(err)),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_bounded_and_blank_lines_reset_the_count() {
        let mut bounded = Bounded::new((), 12);
        assert!(bounded.count(b"data: 1\n"));
        assert!(bounded.count(b"\n"), "a blank line split across chunks");
        assert!(bounded.count(b"data: 2\r\n\r\n"));
        assert!(bounded.count(b"data: 3\r\r"));
        assert!(bounded.count(b"data: 4\r\n"));
        assert!(bounded.count(b"\r\n"), "CRLF, split across chunks");
        assert!(bounded.count(b"123456789012"));
        assert!(!bounded.count(b"3"), "the 13th byte of one event");
        let mut bounded = Bounded::new((), 12);
        assert!(
            !bounded.count(b"data: 1\ndata: 2\n"),
            "lines of one event count together"
        );
    }
}
