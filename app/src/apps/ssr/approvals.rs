//! Approvals (SPEC §8): what the host mints when a person presses Approve on a writing
//! tool's call, and what the call route checks before it runs that call. A token is
//! `v1.<nonce>.<expires>.<mac>`, the MAC an HMAC-SHA-256 over the person, their browser
//! session, the slug, the tool and the canonical arguments, so an approval of one call
//! approves nothing else. Pure: the caller passes the time, and spends the nonce.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::servers::ssr::canonical::{canonical_json, sha256_hex};

/// How long an approval may wait for its call, in seconds.
pub const LIFETIME_SECONDS: i64 = 120;

/// The shortest secret accepted: as long as the MAC it keys.
pub const SECRET_MIN_BYTES: usize = 32;

const VERSION: &str = "v1";
const DOMAIN: &str = "strad-approval-v1";

/// The key approvals are signed with. Never serialized, never printed: whoever holds it can
/// approve any call for anyone.
#[derive(Clone)]
pub struct ApprovalSecret(Vec<u8>);

impl ApprovalSecret {
    /// `None` when shorter than `SECRET_MIN_BYTES`.
    pub fn new(bytes: Vec<u8>) -> Option<Self> {
        (bytes.len() >= SECRET_MIN_BYTES).then_some(Self(bytes))
    }

    fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length")
    }

    /// A key for another purpose, derived under `label` (HMAC-SHA-256 of the label), so
    /// every instance holding this secret derives the same one and neither key reveals the
    /// other.
    pub fn derive(&self, label: &[u8]) -> [u8; 32] {
        let mut mac = self.mac();
        mac.update(label);
        mac.finalize().into_bytes().into()
    }
}

impl fmt::Debug for ApprovalSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApprovalSecret([redacted])")
    }
}

/// The browser session an approval is bound to: the SHA-256 (hex) of its session id, so
/// the id itself never goes into a MAC input or an audit row.
pub fn session_binding(session_id: &str) -> String {
    hex::encode(Sha256::digest(session_id.as_bytes()))
}

/// The digest of a call's arguments that an approval covers and the audit rows name.
pub fn arguments_sha256(arguments: &Map<String, Value>) -> String {
    sha256_hex(canonical_json(&Value::Object(arguments.clone())).as_bytes())
}

/// Exactly which call an approval is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub person: Uuid,
    /// `session_binding` of the browser session that approved.
    pub session: String,
    pub slug: String,
    pub tool: String,
    /// `arguments_sha256` of the call's arguments.
    pub arguments_sha256: String,
}

/// A freshly minted approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minted {
    pub token: String,
    pub nonce: String,
    /// Unix seconds.
    pub expires_at: i64,
}

/// An approval that matches the call it came with and has not expired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub nonce: String,
    /// Unix seconds.
    pub expires_at: i64,
}

/// Why an approval does not let its call run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unverified {
    /// Not a token this console could have minted.
    #[error("malformed")]
    Malformed,
    /// Minted for another call, person, session or key (or forged).
    #[error("does not match")]
    Mismatch,
    /// Genuine, and for this call, but too late. The nonce is authentic (the MAC held).
    #[error("expired")]
    Expired { nonce: String },
}

/// Mints an approval of the call `binding` at `now` (unix seconds), with a fresh nonce.
pub fn mint_at(secret: &ApprovalSecret, binding: &Binding, now: i64) -> Minted {
    let mut nonce = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut nonce);
    let nonce = hex::encode(nonce);
    let expires_at = now.saturating_add(LIFETIME_SECONDS);
    let tag = signer(secret, binding, &nonce, expires_at)
        .finalize()
        .into_bytes();
    let token = format!(
        "{VERSION}.{nonce}.{expires_at}.{}",
        URL_SAFE_NO_PAD.encode(tag)
    );
    Minted {
        token,
        nonce,
        expires_at,
    }
}

/// Checks `token` against the call actually asked (`binding`) at `now`. The MAC is
/// recomputed from that call, so any difference in person, session, slug, tool or
/// arguments is a mismatch; it is compared in constant time, before the expiry is read, so
/// a forged token learns nothing from which answer it gets.
pub fn verify_at(
    secret: &ApprovalSecret,
    token: &str,
    binding: &Binding,
    now: i64,
) -> Result<Verified, Unverified> {
    let (nonce, expires_at, tag) = parse(token).ok_or(Unverified::Malformed)?;
    signer(secret, binding, nonce, expires_at)
        .verify_slice(&tag)
        .map_err(|_| Unverified::Mismatch)?;
    if now >= expires_at {
        return Err(Unverified::Expired {
            nonce: nonce.to_owned(),
        });
    }
    Ok(Verified {
        nonce: nonce.to_owned(),
        expires_at,
    })
}

/// The MAC of one approval, before finalizing. Fields are NUL-separated; every field but
/// the tool name has a fixed alphabet without NUL (uuid, `[a-z0-9-]` slug, hex, decimal),
/// so the tool name is the only free text and the encoding stays unambiguous.
fn signer(
    secret: &ApprovalSecret,
    binding: &Binding,
    nonce: &str,
    expires_at: i64,
) -> Hmac<Sha256> {
    let mut mac = secret.mac();
    let person = binding.person.to_string();
    let expires = expires_at.to_string();
    let fields: [&[u8]; 8] = [
        DOMAIN.as_bytes(),
        person.as_bytes(),
        binding.session.as_bytes(),
        binding.slug.as_bytes(),
        binding.tool.as_bytes(),
        binding.arguments_sha256.as_bytes(),
        nonce.as_bytes(),
        expires.as_bytes(),
    ];
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            mac.update(b"\0");
        }
        mac.update(field);
    }
    mac
}

/// The parts of a well-formed token: exactly one spelling of each, so no two strings carry
/// the same approval.
fn parse(token: &str) -> Option<(&str, i64, Vec<u8>)> {
    let mut parts = token.split('.');
    let (version, nonce, expires, tag) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || version != VERSION {
        return None;
    }
    let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if nonce.len() != 32 || !nonce.bytes().all(lower_hex) {
        return None;
    }
    if expires.is_empty() || expires.len() > 18 || !expires.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let expires_at: i64 = expires.parse().ok()?;
    if expires_at.to_string() != expires {
        return None;
    }
    let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
    (tag.len() == 32).then_some((nonce, expires_at, tag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_700_000_000;

    fn secret() -> ApprovalSecret {
        ApprovalSecret::new(b"0123456789abcdef0123456789abcdef".to_vec()).unwrap()
    }

    fn arguments(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn binding() -> Binding {
        Binding {
            person: Uuid::from_u128(1),
            session: session_binding("session-a"),
            slug: "notes".into(),
            tool: "write-note".into(),
            arguments_sha256: arguments_sha256(&arguments(json!({"text": "hi", "n": 1}))),
        }
    }

    #[test]
    fn an_approval_verifies_for_exactly_its_call_until_it_expires() {
        let minted = mint_at(&secret(), &binding(), NOW);
        assert_eq!(minted.expires_at, NOW + LIFETIME_SECONDS);
        let verified = verify_at(&secret(), &minted.token, &binding(), NOW).unwrap();
        assert_eq!(verified.nonce, minted.nonce);
        assert_eq!(verified.expires_at, minted.expires_at);
        assert!(verify_at(&secret(), &minted.token, &binding(), minted.expires_at - 1).is_ok());
    }

    #[test]
    fn a_token_has_the_contracted_shape() {
        let minted = mint_at(&secret(), &binding(), NOW);
        let parts: Vec<&str> = minted.token.split('.').collect();
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[0], "v1");
        assert_eq!(parts[1], minted.nonce);
        assert_eq!(parts[1].len(), 32);
        assert_eq!(parts[2], (NOW + 120).to_string());
        assert_eq!(URL_SAFE_NO_PAD.decode(parts[3]).unwrap().len(), 32);
    }

    #[test]
    fn every_approval_has_its_own_nonce() {
        let a = mint_at(&secret(), &binding(), NOW);
        let b = mint_at(&secret(), &binding(), NOW);
        assert_ne!(a.nonce, b.nonce);
        assert_ne!(a.token, b.token);
    }

    #[test]
    fn the_mac_is_the_contracted_hmac_over_every_field() {
        let minted = mint_at(&secret(), &binding(), NOW);
        let b = binding();
        let message = format!(
            "strad-approval-v1\0{}\0{}\0{}\0{}\0{}\0{}\0{}",
            b.person,
            b.session,
            b.slug,
            b.tool,
            b.arguments_sha256,
            minted.nonce,
            minted.expires_at
        );
        let mut mac = Hmac::<Sha256>::new_from_slice(b"0123456789abcdef0123456789abcdef").unwrap();
        mac.update(message.as_bytes());
        let expected = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        assert!(minted.token.ends_with(&format!(".{expected}")));
    }

    #[test]
    fn a_change_to_any_field_of_the_call_does_not_match() {
        let minted = mint_at(&secret(), &binding(), NOW);
        /// What is changed, and how.
        type Change = (&'static str, fn(&mut Binding));
        let changes: [Change; 8] = [
            ("person", |b| b.person = Uuid::from_u128(2)),
            ("session", |b| b.session = session_binding("session-b")),
            ("slug", |b| b.slug = "other".into()),
            ("tool", |b| b.tool = "delete-note".into()),
            ("arguments", |b| {
                b.arguments_sha256 = arguments_sha256(&arguments(json!({"text": "hi", "n": 2})))
            }),
            ("no arguments", |b| {
                b.arguments_sha256 = arguments_sha256(&Map::new())
            }),
            // A field's end moved into its neighbour: the separators keep them apart.
            ("slug into tool", |b| {
                b.slug = "note".into();
                b.tool = "swrite-note".into();
            }),
            ("tool case", |b| b.tool = "Write-note".into()),
        ];
        for (what, change) in changes {
            let mut other = binding();
            change(&mut other);
            assert_eq!(
                verify_at(&secret(), &minted.token, &other, NOW),
                Err(Unverified::Mismatch),
                "{what}"
            );
        }
    }

    #[test]
    fn the_same_arguments_in_another_key_order_match() {
        let minted = mint_at(&secret(), &binding(), NOW);
        let mut reordered = binding();
        reordered.arguments_sha256 = arguments_sha256(&arguments(json!({"n": 1, "text": "hi"})));
        assert!(verify_at(&secret(), &minted.token, &reordered, NOW).is_ok());
    }

    #[test]
    fn another_secret_does_not_match() {
        let minted = mint_at(&secret(), &binding(), NOW);
        let other = ApprovalSecret::new(vec![7; 32]).unwrap();
        assert_eq!(
            verify_at(&other, &minted.token, &binding(), NOW),
            Err(Unverified::Mismatch)
        );
    }

    #[test]
    fn a_tampered_token_does_not_match() {
        let minted = mint_at(&secret(), &binding(), NOW);
        let parts: Vec<&str> = minted.token.split('.').collect();
        let later = (NOW + 3600).to_string();
        let other_nonce = "0".repeat(32);
        let zero_mac = URL_SAFE_NO_PAD.encode([0u8; 32]);
        let mut flipped = URL_SAFE_NO_PAD.decode(parts[3]).unwrap();
        flipped[31] ^= 1;
        let flipped = URL_SAFE_NO_PAD.encode(flipped);
        for (what, token) in [
            (
                "a later expiry",
                format!("v1.{}.{later}.{}", parts[1], parts[3]),
            ),
            (
                "another nonce",
                format!("v1.{other_nonce}.{}.{}", parts[2], parts[3]),
            ),
            (
                "a zero MAC",
                format!("v1.{}.{}.{zero_mac}", parts[1], parts[2]),
            ),
            (
                "one bit of the MAC",
                format!("v1.{}.{}.{flipped}", parts[1], parts[2]),
            ),
        ] {
            assert_eq!(
                verify_at(&secret(), &token, &binding(), NOW),
                Err(Unverified::Mismatch),
                "{what}"
            );
        }
    }

    #[test]
    fn a_token_not_in_the_contracted_shape_is_malformed() {
        let minted = mint_at(&secret(), &binding(), NOW);
        let parts: Vec<&str> = minted.token.split('.').collect();
        let (nonce, expires, mac) = (parts[1], parts[2], parts[3]);
        let upper = nonce.to_ascii_uppercase();
        let tag = URL_SAFE_NO_PAD.decode(mac).unwrap();
        // 32 bytes: 43 characters and one `=` when padded.
        let padded = base64::engine::general_purpose::URL_SAFE.encode(&tag);
        let standard = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&tag);
        let short_mac = URL_SAFE_NO_PAD.encode([1u8; 16]);
        let mut cases: Vec<String> = vec![
            String::new(),
            "v1".into(),
            format!("v2.{nonce}.{expires}.{mac}"),
            format!("V1.{nonce}.{expires}.{mac}"),
            format!("v1.{nonce}.{expires}"),
            format!("v1.{nonce}.{expires}.{mac}.x"),
            format!("v1.{}.{expires}.{mac}", &nonce[..31]),
            format!("v1.{nonce}0.{expires}.{mac}"),
            format!("v1.{}g.{expires}.{mac}", &nonce[..31]),
            format!(
                "v1.{}.{expires}.{mac}",
                upper.replace(|c: char| c.is_ascii_digit(), "A")
            ),
            format!("v1.{nonce}.0{expires}.{mac}"),
            format!("v1.{nonce}.+{expires}.{mac}"),
            format!("v1.{nonce}.-1.{mac}"),
            format!("v1.{nonce}..{mac}"),
            format!("v1.{nonce}.99999999999999999999.{mac}"),
            format!("v1.{nonce}.{expires}.{short_mac}"),
            format!("v1.{nonce}.{expires}.{mac}!"),
            format!(" v1.{nonce}.{expires}.{mac}"),
            format!("v1.{nonce}.{expires}.{padded}"),
        ];
        if standard != mac {
            cases.push(format!("v1.{nonce}.{expires}.{standard}"));
        }
        for token in cases {
            assert_eq!(
                verify_at(&secret(), &token, &binding(), NOW),
                Err(Unverified::Malformed),
                "{token:?}"
            );
        }
    }

    #[test]
    fn an_approval_expires_after_its_lifetime_and_says_which_it_was() {
        let minted = mint_at(&secret(), &binding(), NOW);
        for at in [minted.expires_at, minted.expires_at + 1, i64::MAX] {
            assert_eq!(
                verify_at(&secret(), &minted.token, &binding(), at),
                Err(Unverified::Expired {
                    nonce: minted.nonce.clone()
                }),
                "at {at}"
            );
        }
    }

    #[test]
    fn an_expired_approval_for_another_call_is_a_mismatch_not_an_expiry() {
        // The MAC is checked before the expiry: a guess learns nothing from the answer.
        let minted = mint_at(&secret(), &binding(), NOW);
        let mut other = binding();
        other.tool = "delete-note".into();
        assert_eq!(
            verify_at(&secret(), &minted.token, &other, NOW + 10_000),
            Err(Unverified::Mismatch)
        );
    }

    #[test]
    fn a_secret_shorter_than_the_mac_is_refused() {
        assert!(ApprovalSecret::new(vec![1; 31]).is_none());
        assert!(ApprovalSecret::new(vec![1; 32]).is_some());
    }

    #[test]
    fn the_secret_is_never_printed() {
        let printed = format!("{:?}", secret());
        assert_eq!(printed, "ApprovalSecret([redacted])");
        assert!(!printed.contains("0123"));
    }

    #[test]
    fn the_session_binding_is_a_digest_of_the_session_id() {
        let bound = session_binding("abc");
        assert_eq!(bound.len(), 64);
        assert!(!bound.contains("abc"));
        assert_ne!(bound, session_binding("abd"));
    }
}
