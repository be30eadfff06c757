//! Frame tickets: the app session a frame load is bound to (SPEC §6). The console issues one
//! each time it opens an app for a person; the frame route accepts it once, on any instance,
//! for that person, that server, that resource and that pinned copy, within `TTL_SECONDS`.
//!
//! A ticket is `<payload>.<mac>` (both base64url): the payload names the person, the slug,
//! the resource URI, the pinned copy's SHA-256, a random nonce and the expiry, and the MAC is
//! an HMAC-SHA-256 over it under a key every instance derives from the shared approval key.
//! Verifying is pure and needs no database, so a forged ticket costs nothing; spending
//! inserts the nonce into `frame_ticket_spends`, and a second spend of the same nonce — a
//! reload, a `location = …`, a replay on another instance — conflicts and is refused.
//!
//! A page cannot make one: it never sees the console's pages, and the ticket in its own
//! address is spent. The ticket is the only credential the sandbox origin reads (it has no
//! cookie), so it carries everything the frame route needs to know whose copy to serve.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use sqlx::PgPool;
use uuid::Uuid;

use super::approvals::ApprovalSecret;

/// How long an issued ticket waits for its frame to load, in seconds.
pub const TTL_SECONDS: i64 = 300;

const VERSION: u8 = 1;
/// What the ticket key is derived under, so it is never the approval key itself.
const KEY_LABEL: &[u8] = b"strad-frame-ticket-key-v1";
/// Bytes before the slug: version, person, nonce, expiry, digest, slug length.
const FIXED: usize = 1 + 16 + 16 + 8 + 32 + 1;
/// The longest ticket accepted (a resource URI is short; this bounds the work a forged one
/// can cause before its MAC is checked).
const MAX_TICKET_CHARS: usize = 4096;

/// What a verified ticket says: whose frame load it is and of what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claims {
    pub person: Uuid,
    pub slug: String,
    pub uri: String,
    /// The pinned copy's SHA-256 (lowercase hex) the console opened.
    pub sha256: String,
    pub nonce: [u8; 16],
    /// Unix seconds.
    pub expires_at: i64,
}

/// Why a ticket was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("not a ticket")]
    Malformed,
    #[error("not signed by this console")]
    Mismatch,
    #[error("for another server")]
    OtherServer,
    #[error("expired")]
    Expired,
}

/// The key tickets are signed with. Never serialized, never printed.
pub struct FrameTickets {
    key: [u8; 32],
}

impl std::fmt::Debug for FrameTickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FrameTickets([redacted])")
    }
}

impl FrameTickets {
    /// Tickets keyed from the approval key every instance shares (`approval_store`).
    pub fn new(secret: &ApprovalSecret) -> Self {
        Self {
            key: secret.derive(KEY_LABEL),
        }
    }

    fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes a key of any length")
    }

    /// A fresh ticket for `person` to load `uri` of `slug` once, as pinned with `sha256`.
    /// `None` when `sha256` is not a SHA-256 in hex or the slug is longer than 255 bytes.
    pub fn issue(&self, person: Uuid, slug: &str, uri: &str, sha256: &str) -> Option<String> {
        let ticket = self.issue_at(person, slug, uri, sha256, now())?;
        crate::metrics::ticket(crate::metrics::Ticket::Issued);
        Some(ticket)
    }

    pub fn issue_at(
        &self,
        person: Uuid,
        slug: &str,
        uri: &str,
        sha256: &str,
        now: i64,
    ) -> Option<String> {
        let digest: [u8; 32] = hex::decode(sha256).ok()?.try_into().ok()?;
        let slug_len = u8::try_from(slug.len()).ok()?;
        let mut nonce = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let mut payload = Vec::with_capacity(FIXED + slug.len() + uri.len());
        payload.push(VERSION);
        payload.extend_from_slice(person.as_bytes());
        payload.extend_from_slice(&nonce);
        payload.extend_from_slice(&now.saturating_add(TTL_SECONDS).to_be_bytes());
        payload.extend_from_slice(&digest);
        payload.push(slug_len);
        payload.extend_from_slice(slug.as_bytes());
        payload.extend_from_slice(uri.as_bytes());
        let mut mac = self.mac();
        mac.update(&payload);
        let tag = mac.finalize().into_bytes();
        Some(format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        ))
    }

    /// The claims of `ticket` for a load of `slug`'s frame, when this console signed it and
    /// it has not expired. The MAC is checked (in constant time) before anything it covers
    /// is read. Spends nothing: see `spend`.
    pub fn verify(&self, ticket: &str, slug: &str) -> Result<Claims, Refused> {
        let verified = self.verify_at(ticket, slug, now());
        if verified.is_err() {
            crate::metrics::ticket(crate::metrics::Ticket::Refused);
        }
        verified
    }

    pub fn verify_at(&self, ticket: &str, slug: &str, now: i64) -> Result<Claims, Refused> {
        if ticket.len() > MAX_TICKET_CHARS {
            return Err(Refused::Malformed);
        }
        let (payload, tag) = ticket.split_once('.').ok_or(Refused::Malformed)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| Refused::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| Refused::Malformed)?;
        let mut mac = self.mac();
        mac.update(&payload);
        mac.verify_slice(&tag).map_err(|_| Refused::Mismatch)?;
        let claims = decode(&payload).ok_or(Refused::Malformed)?;
        if claims.slug != slug {
            return Err(Refused::OtherServer);
        }
        if now >= claims.expires_at {
            return Err(Refused::Expired);
        }
        Ok(claims)
    }
}

/// The claims of a payload this console signed (its layout is `issue_at`'s).
fn decode(payload: &[u8]) -> Option<Claims> {
    if payload.len() < FIXED || payload[0] != VERSION {
        return None;
    }
    let person = Uuid::from_bytes(payload[1..17].try_into().ok()?);
    let nonce: [u8; 16] = payload[17..33].try_into().ok()?;
    let expires_at = i64::from_be_bytes(payload[33..41].try_into().ok()?);
    let sha256 = hex::encode(&payload[41..73]);
    let slug_len = usize::from(payload[73]);
    let rest = &payload[FIXED..];
    if rest.len() < slug_len {
        return None;
    }
    let (slug, uri) = rest.split_at(slug_len);
    Some(Claims {
        person,
        slug: String::from_utf8(slug.to_vec()).ok()?,
        uri: String::from_utf8(uri.to_vec()).ok()?,
        sha256,
        nonce,
        expires_at,
    })
}

/// Spends verified tickets, many in one statement: a caller waits until its ticket's nonce
/// is in `frame_ticket_spends` (or found there already). A spend that arrives while one
/// statement is in flight goes in the next, with every other that arrived meanwhile, so a
/// frame load alone waits one round trip as before and concurrent loads share theirs (one
/// statement, one commit, instead of one each). One task, on a connection of its own for
/// as long as that connection works.
#[derive(Clone)]
pub struct Spends {
    send: tokio::sync::mpsc::UnboundedSender<Spending>,
}

struct Spending {
    nonce: [u8; 16],
    expires_at: i64,
    first: tokio::sync::oneshot::Sender<Result<bool, String>>,
}

/// Tickets spent in one statement at most.
const SPENDS_AT_ONCE: usize = 256;
/// The longest a statement of spends is waited for; its loads are then refused.
const SPEND_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Spends {
    /// Starts the spender on `pool`; it stops when every `Spends` is dropped.
    pub fn spawn(pool: PgPool) -> Self {
        let (send, mut received) = tokio::sync::mpsc::unbounded_channel::<Spending>();
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(SPENDS_AT_ONCE);
            let mut held: Option<sqlx::pool::PoolConnection<sqlx::Postgres>> = None;
            while received.recv_many(&mut batch, SPENDS_AT_ONCE).await > 0 {
                // A connection that failed is let go and the next batch takes another. A
                // failed batch is not tried again: its commit may have happened, and its
                // frame loads are refused.
                let inserted = async {
                    let mut connection = match held.take() {
                        Some(connection) => connection,
                        None => pool.acquire().await?,
                    };
                    let new = spend_many(&mut connection, &batch).await?;
                    held = Some(connection);
                    Ok::<_, sqlx::Error>(new)
                };
                // A connection that stops answering holds no frame load for longer.
                let inserted = tokio::time::timeout(SPEND_WAIT, inserted)
                    .await
                    .unwrap_or_else(|_| Err(sqlx::Error::PoolTimedOut));
                match inserted {
                    Ok(mut new) => {
                        for spending in batch.drain(..) {
                            // The first of a nonce's spends in the batch takes it; any other
                            // (the same ticket twice at once) finds it gone.
                            let first = new.remove(&spending.nonce);
                            crate::metrics::ticket(if first {
                                crate::metrics::Ticket::Spent
                            } else {
                                crate::metrics::Ticket::Refused
                            });
                            let _ = spending.first.send(Ok(first));
                        }
                    }
                    Err(error) => {
                        let why = error.to_string();
                        for spending in batch.drain(..) {
                            let _ = spending.first.send(Err(why.clone()));
                        }
                    }
                }
            }
        });
        Self { send }
    }

    /// Spends a verified ticket: `true` the first time on any instance, `false` ever after.
    pub async fn spend(&self, claims: &Claims) -> Result<bool, sqlx::Error> {
        let (first, answer) = tokio::sync::oneshot::channel();
        self.send
            .send(Spending {
                nonce: claims.nonce,
                expires_at: claims.expires_at,
                first,
            })
            .map_err(|_| sqlx::Error::PoolClosed)?;
        match answer.await {
            Ok(Ok(first)) => Ok(first),
            Ok(Err(why)) => Err(sqlx::Error::Protocol(why)),
            Err(_) => Err(sqlx::Error::PoolClosed),
        }
    }
}

/// Inserts each nonce not spent yet, in one statement; returns those it inserted.
async fn spend_many(
    connection: &mut sqlx::PgConnection,
    spends: &[Spending],
) -> Result<std::collections::HashSet<[u8; 16]>, sqlx::Error> {
    let nonces: Vec<Vec<u8>> = spends.iter().map(|s| s.nonce.to_vec()).collect();
    let expiries: Vec<f64> = spends.iter().map(|s| s.expires_at as f64).collect();
    // A nonce twice in one statement goes in once: the second conflicts with the first.
    let inserted = sqlx::query_scalar!(
        r#"INSERT INTO frame_ticket_spends (nonce, expires_at)
           SELECT nonce, to_timestamp(expires_at)
             FROM unnest($1::bytea[], $2::float8[]) AS spend(nonce, expires_at)
           ON CONFLICT (nonce) DO NOTHING
           RETURNING nonce"#,
        &nonces,
        &expiries,
    )
    .fetch_all(connection)
    .await?;
    Ok(inserted
        .into_iter()
        .filter_map(|nonce| <[u8; 16]>::try_from(nonce.as_slice()).ok())
        .collect())
}

/// Forgets spends whose tickets have expired (they can no longer verify). Returns how many.
pub async fn prune(pool: &PgPool) -> Result<u64, sqlx::Error> {
    let pruned = sqlx::query!("DELETE FROM frame_ticket_spends WHERE expires_at < now()")
        .execute(pool)
        .await?;
    Ok(pruned.rows_affected())
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    fn tickets(key: &[u8]) -> FrameTickets {
        FrameTickets::new(&ApprovalSecret::new(key.to_vec()).unwrap())
    }

    #[test]
    fn a_ticket_carries_its_claims_to_any_instance_with_the_same_key() {
        let (a, b) = (tickets(&[7; 32]), tickets(&[7; 32]));
        let alice = Uuid::new_v4();
        let t = a
            .issue_at(alice, "clock", "ui://clock/app.html", DIGEST, 1_000)
            .unwrap();
        let claims = b.verify_at(&t, "clock", 1_001).unwrap();
        assert_eq!(claims.person, alice);
        assert_eq!(claims.slug, "clock");
        assert_eq!(claims.uri, "ui://clock/app.html");
        assert_eq!(claims.sha256, DIGEST);
        assert_eq!(claims.expires_at, 1_000 + TTL_SECONDS);
        let again = a
            .issue_at(alice, "clock", "ui://clock/app.html", DIGEST, 1_000)
            .unwrap();
        assert_ne!(t, again, "each ticket has its own nonce");
        assert!(
            t.bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')),
            "a ticket is one path segment: {t}"
        );
    }

    #[test]
    fn a_ticket_is_refused_for_another_server_after_expiry_or_under_another_key() {
        let a = tickets(&[7; 32]);
        let t = a
            .issue_at(
                Uuid::new_v4(),
                "clock",
                "ui://clock/app.html",
                DIGEST,
                1_000,
            )
            .unwrap();
        assert_eq!(a.verify_at(&t, "other", 1_001), Err(Refused::OtherServer));
        assert_eq!(
            a.verify_at(&t, "clock", 1_000 + TTL_SECONDS),
            Err(Refused::Expired)
        );
        assert_eq!(
            tickets(&[8; 32]).verify_at(&t, "clock", 1_001),
            Err(Refused::Mismatch)
        );
    }

    #[test]
    fn a_changed_byte_anywhere_is_refused() {
        let a = tickets(&[7; 32]);
        let t = a
            .issue_at(
                Uuid::new_v4(),
                "clock",
                "ui://clock/app.html",
                DIGEST,
                1_000,
            )
            .unwrap();
        let (payload, tag) = t.split_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(payload).unwrap();
        for i in 0..bytes.len() {
            bytes[i] ^= 1;
            let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(&bytes));
            assert_eq!(a.verify_at(&forged, "clock", 1_001), Err(Refused::Mismatch));
            bytes[i] ^= 1;
        }
        for bad in [
            "",
            ".",
            "abc",
            "a.b.c",
            &format!("{payload}."),
            &"a".repeat(5000),
        ] {
            assert!(a.verify_at(bad, "clock", 1_001).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_a_sha256_and_a_short_slug_make_a_ticket() {
        let a = tickets(&[7; 32]);
        assert!(a.issue_at(Uuid::nil(), "s", "u", "abc", 0).is_none());
        assert!(
            a.issue_at(Uuid::nil(), &"s".repeat(256), "u", DIGEST, 0)
                .is_none()
        );
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_ticket_is_spent_once_then_pruned_once_expired(pool: PgPool) {
        let a = tickets(&[7; 32]);
        let t = a.issue(Uuid::new_v4(), "clock", "ui://c", DIGEST).unwrap();
        let claims = a.verify(&t, "clock").unwrap();
        let spends = Spends::spawn(pool.clone());
        assert!(spends.spend(&claims).await.unwrap());
        assert!(!spends.spend(&claims).await.unwrap(), "spent");
        let expired = Claims {
            nonce: [1; 16],
            expires_at: 1_000,
            ..claims
        };
        assert!(spends.spend(&expired).await.unwrap());
        assert_eq!(prune(&pool).await.unwrap(), 1, "only the expired one goes");
    }

    /// Many loads at once, each ticket presented several times among them: each is spent by
    /// exactly one, whether its presentations share a statement or not.
    #[sqlx::test(migrations = "../migrations")]
    async fn tickets_spent_together_are_each_spent_once(pool: PgPool) {
        let a = tickets(&[7; 32]);
        let spends = Spends::spawn(pool.clone());
        let claims: Vec<Claims> = (0..50)
            .map(|_| {
                let t = a.issue(Uuid::new_v4(), "clock", "ui://c", DIGEST).unwrap();
                a.verify(&t, "clock").unwrap()
            })
            .collect();
        let presented: Vec<&Claims> = claims.iter().cycle().take(claims.len() * 4).collect();
        let firsts = futures::future::join_all(presented.iter().map(|c| spends.spend(c))).await;
        for (i, c) in claims.iter().enumerate() {
            let spent_by = presented
                .iter()
                .zip(&firsts)
                .filter(|(p, first)| p.nonce == c.nonce && *first.as_ref().unwrap())
                .count();
            assert_eq!(spent_by, 1, "ticket {i}");
        }
        // And a spender of another instance finds them spent.
        let other = Spends::spawn(pool.clone());
        assert!(!other.spend(&claims[0]).await.unwrap());
    }
}
