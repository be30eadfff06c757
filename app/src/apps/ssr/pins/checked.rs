//! Pins checked once per row version: an open trusts a pin's digest only for a version of
//! its row whose bytes this instance has read and found intact.

use std::collections::HashMap;

use sqlx::PgPool;
use uuid::Uuid;

use super::{PinFacts, get};

/// The pin row versions (PostgreSQL's `xmin`, new on every write to the row: a refresh, an
/// edit, a tampering) whose bytes this instance has read and found intact, so that opening an
/// app does not read and hash its whole pinned copy each time (a few hundred KiB for the
/// example apps). The frame cache trusts a row version in the same way.
#[derive(Default)]
pub struct Checked(std::sync::Mutex<HashMap<(Uuid, String, String), String>>);

/// Pins remembered at once; past it the memo starts over (each pin is then checked again).
const CHECKED_MAX: usize = 100_000;

impl Checked {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Uuid, String, String), String>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the pin's row at `version` was found intact here.
    pub fn holds(&self, user: Uuid, slug: &str, uri: &str, version: &str) -> bool {
        self.lock()
            .get(&(user, slug.to_owned(), uri.to_owned()))
            .is_some_and(|checked| checked == version)
    }

    fn remember(&self, user: Uuid, slug: &str, uri: &str, version: String) {
        let mut held = self.lock();
        if held.len() >= CHECKED_MAX {
            held.clear();
        }
        held.insert((user, slug.to_owned(), uri.to_owned()), version);
    }
}

/// The person's pin of `uri` of `slug`, its bytes checked against its digest: read without
/// them when `checked` holds this version of the row, else read whole, checked and, when
/// intact, remembered at the version read with the bytes.
pub async fn get_checked(
    pool: &PgPool,
    checked: &Checked,
    user: Uuid,
    slug: &str,
    uri: &str,
) -> Result<Option<PinFacts>, sqlx::Error> {
    let facts = sqlx::query!(
        r#"SELECT sha256, size, meta_ui, server_fingerprint, xmin::text AS "version!" FROM pins
         WHERE user_id = $1 AND slug = $2 AND uri = $3"#,
        user,
        slug,
        uri,
    )
    .fetch_optional(pool)
    .await?;
    let Some(facts) = facts else {
        return Ok(None);
    };
    if checked.holds(user, slug, uri, &facts.version) {
        return Ok(Some(PinFacts {
            sha256: facts.sha256,
            size: facts.size,
            meta_ui: facts.meta_ui,
            server_fingerprint: facts.server_fingerprint,
            intact: true,
        }));
    }
    let Some((row, version)) = get(pool, user, slug, uri).await? else {
        return Ok(None);
    };
    let facts = row.facts();
    if facts.intact {
        checked.remember(user, slug, uri, version);
    }
    Ok(Some(facts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::ssr::pins::head;
    use crate::servers::ssr::canonical::sha256_hex;

    /// A person and their pin of `ui://clock/app` of a server `clock`, intact.
    async fn pinned(pool: &PgPool) -> Uuid {
        let person: Uuid = sqlx::query_scalar(
            "INSERT INTO users (issuer, subject, email) VALUES ('t', 's', 'p@example.com') RETURNING id",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO servers (slug, display_name, transport, url, source)
             VALUES ('clock', 'Clock', 'http', 'http://127.0.0.1:1/mcp', 'ui')",
        )
        .execute(pool)
        .await
        .unwrap();
        let bytes = b"<!doctype html><p>the clock</p>".to_vec();
        sqlx::query(
            "INSERT INTO pins (user_id, slug, uri, bytes, sha256, size, server_fingerprint)
             VALUES ($1, 'clock', 'ui://clock/app', $2, $3, $4, 'f')",
        )
        .bind(person)
        .bind(&bytes)
        .bind(sha256_hex(&bytes))
        .bind(bytes.len() as i64)
        .execute(pool)
        .await
        .unwrap();
        person
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_pin_is_checked_once_per_row_version_and_a_changed_row_again(pool: PgPool) {
        let person = pinned(&pool).await;
        let checked = Checked::default();
        let read = || get_checked(&pool, &checked, person, "clock", "ui://clock/app");
        let version = || async {
            head(&pool, person, "clock", "ui://clock/app")
                .await
                .unwrap()
                .unwrap()
                .version
        };
        let holds = |version: &str| checked.holds(person, "clock", "ui://clock/app", version);

        assert!(read().await.unwrap().unwrap().intact);
        let first = version().await;
        assert!(holds(&first), "an intact row is remembered at its version");
        assert!(read().await.unwrap().unwrap().intact);

        // Any write makes a new version, which is read and checked again.
        sqlx::query("UPDATE pins SET size = size")
            .execute(&pool)
            .await
            .unwrap();
        let second = version().await;
        assert_ne!(first, second);
        assert!(!holds(&second));
        assert!(read().await.unwrap().unwrap().intact);
        assert!(holds(&second));

        // Bytes changed under the digest: corrupt, and not remembered.
        sqlx::query("UPDATE pins SET bytes = bytes || '<script>evil()</script>'::bytea")
            .execute(&pool)
            .await
            .unwrap();
        let tampered = version().await;
        let facts = read().await.unwrap().unwrap();
        assert!(!facts.intact);
        assert!(!holds(&tampered));
        assert!(
            !read().await.unwrap().unwrap().intact,
            "checked again, still corrupt"
        );

        assert!(
            get_checked(&pool, &checked, person, "clock", "ui://other")
                .await
                .unwrap()
                .is_none()
        );
    }
}
