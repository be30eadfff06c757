//! Frame tickets: the app session a frame load is bound to (SPEC §6). The console issues one
//! each time it opens an app for a person; the frame route accepts it once, on any instance,
//! for that person, that server, that resource and that pinned copy, within `TTL_SECONDS`.
//!
//! A ticket is `<payload>.<mac>` (both base64url): the payload names the person, the slug,
//! the resource URI, the pinned copy's SHA-256, a random nonce, the instance that issued it
//! and the expiry, and the MAC is an HMAC-SHA-256 over it under a key every instance derives
//! from the shared approval key. Verifying is pure and needs no database, so a forged ticket
//! costs nothing.
//!
//! The issuing instance holds each ticket it issued, unspent, in memory (`Held`) until a load
//! spends it or it expires. A load on that instance takes it from there and asks nobody; a
//! load on another instance asks the issuer for it through PostgreSQL (`ticket_claims`), and
//! the issuer takes it from the same memory before answering. Only the issuer ever decides,
//! under one lock, so a ticket loads one document whichever instances its loads reach — a
//! reload, a `location = …` or a replay elsewhere finds it gone. An instance that stops takes
//! its unspent tickets with it: their loads are refused, and opening the app again issues a
//! new one.
//!
//! A page cannot make one: it never sees the console's pages, and the ticket in its own
//! address is spent. The ticket is the only credential the sandbox origin reads (it has no
//! cookie), so it carries everything the frame route needs to know whose copy to serve.

use std::sync::{Arc, OnceLock};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use sqlx::PgPool;
use uuid::Uuid;

use super::approvals::ApprovalSecret;
pub use super::held_tickets::Held;
use super::ticket_claims::Claimer;

/// How long an issued ticket waits for its frame to load, in seconds.
pub const TTL_SECONDS: i64 = 300;

const VERSION: u8 = 2;
/// What the ticket key is derived under, so it is never the approval key itself.
const KEY_LABEL: &[u8] = b"strad-frame-ticket-key-v1";
/// Bytes before the slug: version, person, nonce, issuer, expiry, digest, slug length.
const FIXED: usize = 1 + 16 + 16 + 16 + 8 + 32 + 1;
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
    /// The instance that issued the ticket and holds it until it is spent.
    pub issuer: Uuid,
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

/// This instance's tickets: the key they are signed with (never serialized, never printed)
/// and those it issued that are not spent yet.
pub struct FrameTickets {
    /// HMAC-SHA-256 keyed with the ticket key: cloned for each ticket signed or verified,
    /// so the key's two padded blocks are hashed once, not per load.
    keyed: Hmac<Sha256>,
    /// This instance, named in every ticket it signs.
    instance: Uuid,
    /// Unspent tickets one person may have here; another voids their oldest (an app opened
    /// whose frame never loaded), so what an instance holds is bounded by its people, not
    /// by how often they open apps.
    per_person: usize,
    held: Arc<Held>,
    /// How a ticket another instance holds is asked for; unset, such a ticket is refused.
    others: OnceLock<Claimer>,
}

impl std::fmt::Debug for FrameTickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FrameTickets([redacted])")
    }
}

impl FrameTickets {
    /// Tickets of `instance`, keyed from the approval key every instance shares
    /// (`approval_store`), holding at most `per_person` unspent for one person. Alone until
    /// `ask_others`.
    pub fn new(secret: &ApprovalSecret, instance: Uuid, per_person: usize) -> Self {
        Self {
            keyed: Hmac::<Sha256>::new_from_slice(&secret.derive(KEY_LABEL))
                .expect("HMAC takes a key of any length"),
            instance,
            per_person: per_person.max(1),
            held: Arc::default(),
            others: OnceLock::new(),
        }
    }

    /// Answers other instances asking for the tickets this one holds, and asks them for
    /// theirs, through `pool` (`ticket_claims`); an issuer not seen within `alive`
    /// (`instances`) is not asked, and its tickets are refused at once. Returns once this
    /// instance hears them (whether it does, after a few seconds at most), so it answers
    /// for every ticket it issues.
    pub async fn ask_others(&self, pool: PgPool, alive: std::time::Duration) -> bool {
        self.others
            .get_or_init(|| Claimer::spawn(pool, self.instance, self.held.clone(), alive))
            .listening(std::time::Duration::from_secs(5))
            .await
    }

    fn mac(&self) -> Hmac<Sha256> {
        self.keyed.clone()
    }

    /// A fresh ticket for `person` to load `uri` of `slug` once, as pinned with `sha256`,
    /// held here until spent. `None` when `sha256` is not a SHA-256 in hex or the slug is
    /// longer than 255 bytes.
    pub fn issue(&self, person: Uuid, slug: &str, uri: &str, sha256: &str) -> Option<String> {
        let now = now();
        let mut nonce = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let ticket = self.sign(person, slug, uri, sha256, nonce, now)?;
        let voided = self.held.hold(
            person,
            nonce,
            now.saturating_add(TTL_SECONDS),
            self.per_person,
        );
        crate::metrics::ticket(crate::metrics::Ticket::Issued);
        for _ in 0..voided {
            crate::metrics::ticket(crate::metrics::Ticket::Voided);
        }
        Some(ticket)
    }

    /// A ticket as `issue` signs it at `now`, held nowhere (it verifies, and never spends).
    pub fn issue_at(
        &self,
        person: Uuid,
        slug: &str,
        uri: &str,
        sha256: &str,
        now: i64,
    ) -> Option<String> {
        let mut nonce = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        self.sign(person, slug, uri, sha256, nonce, now)
    }

    fn sign(
        &self,
        person: Uuid,
        slug: &str,
        uri: &str,
        sha256: &str,
        nonce: [u8; 16],
        now: i64,
    ) -> Option<String> {
        let digest: [u8; 32] = hex::decode(sha256).ok()?.try_into().ok()?;
        let slug_len = u8::try_from(slug.len()).ok()?;
        let mut payload = Vec::with_capacity(FIXED + slug.len() + uri.len());
        payload.push(VERSION);
        payload.extend_from_slice(person.as_bytes());
        payload.extend_from_slice(&nonce);
        payload.extend_from_slice(self.instance.as_bytes());
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
        // Decoded onto the stack (a ticket is bounded): its bytes take no allocation.
        let mut payload_bytes = [0u8; MAX_TICKET_CHARS / 4 * 3];
        let payload = URL_SAFE_NO_PAD
            .decode_slice(payload, &mut payload_bytes)
            .map(|len| &payload_bytes[..len])
            .map_err(|_| Refused::Malformed)?;
        // A tag is 32 bytes: a longer one does not decode here (malformed), a shorter one
        // fails the MAC check.
        let mut tag_bytes = [0u8; 32];
        let tag = URL_SAFE_NO_PAD
            .decode_slice(tag, &mut tag_bytes)
            .map(|len| &tag_bytes[..len])
            .map_err(|_| Refused::Malformed)?;
        let mut mac = self.mac();
        mac.update(payload);
        mac.verify_slice(tag).map_err(|_| Refused::Mismatch)?;
        let claims = decode(payload).ok_or(Refused::Malformed)?;
        if claims.slug != slug {
            return Err(Refused::OtherServer);
        }
        if now >= claims.expires_at {
            return Err(Refused::Expired);
        }
        Ok(claims)
    }

    /// Spends a verified ticket: `true` for the first load on any instance, `false` ever
    /// after — and when its issuer cannot be asked (it stopped, or is not heard from), since
    /// then it may have been spent there. An error is the database failing to carry the
    /// question.
    pub async fn spend(&self, claims: &Claims) -> Result<bool, sqlx::Error> {
        let first = if claims.issuer == self.instance {
            self.held.take(&claims.nonce)
        } else {
            match self.others.get() {
                Some(others) => others.claim(claims.issuer, claims.nonce).await?,
                None => false,
            }
        };
        crate::metrics::ticket(if first {
            crate::metrics::Ticket::Spent
        } else {
            crate::metrics::Ticket::Refused
        });
        Ok(first)
    }

    /// Forgets the expired tickets held here (they can no longer verify). Returns how many.
    pub fn prune(&self) -> usize {
        self.held.prune(now())
    }
}

/// The claims of a payload this console signed (its layout is `issue_at`'s).
fn decode(payload: &[u8]) -> Option<Claims> {
    if payload.len() < FIXED || payload[0] != VERSION {
        return None;
    }
    let person = Uuid::from_bytes(payload[1..17].try_into().ok()?);
    let nonce: [u8; 16] = payload[17..33].try_into().ok()?;
    let issuer = Uuid::from_bytes(payload[33..49].try_into().ok()?);
    let expires_at = i64::from_be_bytes(payload[49..57].try_into().ok()?);
    let sha256 = hex::encode(&payload[57..89]);
    let slug_len = usize::from(payload[89]);
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
        issuer,
        expires_at,
    })
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

    const PER_PERSON: usize = 64;

    fn tickets(key: &[u8]) -> FrameTickets {
        FrameTickets::new(
            &ApprovalSecret::new(key.to_vec()).unwrap(),
            Uuid::new_v4(),
            PER_PERSON,
        )
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
        assert_eq!(claims.issuer, a.instance, "the issuer holds it");
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
        // The tag cut short or carried on: neither is the tag.
        let tag_bytes = URL_SAFE_NO_PAD.decode(tag).unwrap();
        let short = format!("{payload}.{}", URL_SAFE_NO_PAD.encode(&tag_bytes[..31]));
        assert_eq!(a.verify_at(&short, "clock", 1_001), Err(Refused::Mismatch));
        let long = format!(
            "{payload}.{}",
            URL_SAFE_NO_PAD.encode([&tag_bytes[..], &[0]].concat())
        );
        assert_eq!(a.verify_at(&long, "clock", 1_001), Err(Refused::Malformed));
        assert_eq!(
            a.verify_at(&t, "clock", 1_001).map(|c| c.slug),
            Ok("clock".into())
        );
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

    fn issued(a: &FrameTickets, person: Uuid) -> Claims {
        let t = a.issue(person, "clock", "ui://c", DIGEST).unwrap();
        a.verify(&t, "clock").unwrap()
    }

    #[tokio::test]
    async fn the_issuer_spends_its_ticket_once_and_no_other_ticket() {
        let a = tickets(&[7; 32]);
        let claims = issued(&a, Uuid::new_v4());
        assert!(a.spend(&claims).await.unwrap());
        assert!(!a.spend(&claims).await.unwrap(), "spent");
        // Signed here but never issued (held nowhere), or held by an instance this one
        // cannot ask: refused.
        let t = a
            .issue_at(Uuid::new_v4(), "clock", "ui://c", DIGEST, now())
            .unwrap();
        assert!(!a.spend(&a.verify(&t, "clock").unwrap()).await.unwrap());
        let b = FrameTickets {
            instance: Uuid::new_v4(),
            ..tickets(&[7; 32])
        };
        let theirs = issued(&b, Uuid::new_v4());
        assert!(!a.spend(&theirs).await.unwrap(), "nobody to ask");
        assert!(b.spend(&theirs).await.unwrap(), "still b's to spend");
    }

    #[tokio::test]
    async fn loads_of_one_ticket_at_once_spend_it_once() {
        let a = Arc::new(tickets(&[7; 32]));
        let claims: Vec<Claims> = (0..50).map(|_| issued(&a, Uuid::new_v4())).collect();
        let loads = claims.iter().cycle().take(claims.len() * 4).map(|c| {
            let (a, c) = (a.clone(), c.clone());
            tokio::spawn(async move { (c.nonce, a.spend(&c).await.unwrap()) })
        });
        let mut firsts = std::collections::HashMap::new();
        for load in futures::future::join_all(loads).await {
            let (nonce, first) = load.unwrap();
            *firsts.entry(nonce).or_insert(0) += usize::from(first);
        }
        assert_eq!(firsts.len(), claims.len());
        assert!(firsts.values().all(|&n| n == 1), "{firsts:?}");
    }

    #[tokio::test]
    async fn a_person_holds_a_bounded_number_and_their_oldest_is_voided() {
        let a = tickets(&[7; 32]);
        let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
        let bobs = issued(&a, bob);
        let alices: Vec<Claims> = (0..PER_PERSON + 2).map(|_| issued(&a, alice)).collect();
        assert!(!a.spend(&alices[0]).await.unwrap(), "voided");
        assert!(!a.spend(&alices[1]).await.unwrap(), "voided");
        for claims in &alices[2..] {
            assert!(a.spend(claims).await.unwrap());
        }
        assert!(a.spend(&bobs).await.unwrap(), "another person's are theirs");
        // Spent ones do not count: a person who loads what they open never loses one.
        let again: Vec<Claims> = (0..PER_PERSON).map(|_| issued(&a, alice)).collect();
        for claims in &again {
            assert!(a.spend(claims).await.unwrap());
        }
    }
}
