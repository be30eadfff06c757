//! User and role queries. Each takes an executor so a caller can run it inside its own
//! transaction.

use sqlx::{FromRow, PgExecutor};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::auth::Role;

#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct UserRow {
    pub id: Uuid,
    pub issuer: String,
    pub subject: String,
    pub email: String,
    pub display_name: Option<String>,
    pub created_at: OffsetDateTime,
    pub last_sign_in_at: OffsetDateTime,
}

/// The identity a sign-in proved: the issuer's (issuer, subject) pair is the key; email and
/// name follow whatever the issuer says now.
#[derive(Clone, Debug)]
pub struct VerifiedIdentity {
    pub issuer: String,
    pub subject: String,
    pub email: String,
    pub display_name: Option<String>,
}

/// Inserts the person or refreshes their email, name and last sign-in.
pub async fn upsert_user(
    db: impl PgExecutor<'_>,
    identity: &VerifiedIdentity,
) -> Result<UserRow, sqlx::Error> {
    sqlx::query_as!(
        UserRow,
        "INSERT INTO users (issuer, subject, email, display_name)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT ON CONSTRAINT users_issuer_subject_key DO UPDATE
            SET email = EXCLUDED.email,
                display_name = EXCLUDED.display_name,
                last_sign_in_at = now()
         RETURNING id, issuer, subject, email, display_name, created_at, last_sign_in_at",
        identity.issuer,
        identity.subject,
        identity.email,
        identity.display_name,
    )
    .fetch_one(db)
    .await
}

pub async fn find_user(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<UserRow>, sqlx::Error> {
    sqlx::query_as!(
        UserRow,
        "SELECT id, issuer, subject, email, display_name, created_at, last_sign_in_at
         FROM users WHERE id = $1",
        id,
    )
    .fetch_optional(db)
    .await
}

/// The roles among `names`, in a stable order. A role name the code does not know (added to
/// the table by hand) is skipped rather than trusted.
pub fn known_roles(names: &[String]) -> Vec<Role> {
    let mut roles: Vec<Role> = names.iter().filter_map(|name| Role::parse(name)).collect();
    roles.sort();
    roles
}

/// A person and their roles, in one round trip (every request asks this).
pub async fn find_user_with_roles(
    db: impl PgExecutor<'_>,
    id: Uuid,
) -> Result<Option<(UserRow, Vec<Role>)>, sqlx::Error> {
    // `roles`: the names of theirs in `user_roles`, an empty array when none.
    let row = sqlx::query!(
        r#"SELECT u.id, u.issuer, u.subject, u.email, u.display_name, u.created_at,
                u.last_sign_in_at,
                COALESCE(array_agg(r.role ORDER BY r.role) FILTER (WHERE r.role IS NOT NULL),
                         '{}') AS "roles!"
         FROM users u LEFT JOIN user_roles r ON r.user_id = u.id
         WHERE u.id = $1 GROUP BY u.id"#,
        id,
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|row| {
        let user = UserRow {
            id: row.id,
            issuer: row.issuer,
            subject: row.subject,
            email: row.email,
            display_name: row.display_name,
            created_at: row.created_at,
            last_sign_in_at: row.last_sign_in_at,
        };
        (user, known_roles(&row.roles))
    }))
}

/// Grants a role; granting one already held changes nothing. Returns whether it was new.
pub async fn grant_role(
    db: impl PgExecutor<'_>,
    user_id: Uuid,
    role: Role,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query!(
        "INSERT INTO user_roles (user_id, role) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        user_id,
        role.as_str(),
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Revokes a role. Returns whether the person held it.
pub async fn revoke_role(
    db: impl PgExecutor<'_>,
    user_id: Uuid,
    role: Role,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query!(
        "DELETE FROM user_roles WHERE user_id = $1 AND role = $2",
        user_id,
        role.as_str(),
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// The person's roles, in a stable order (`known_roles`).
pub async fn roles_of(db: impl PgExecutor<'_>, user_id: Uuid) -> Result<Vec<Role>, sqlx::Error> {
    let names = sqlx::query_scalar!(
        "SELECT role FROM user_roles WHERE user_id = $1 ORDER BY role",
        user_id,
    )
    .fetch_all(db)
    .await?;
    Ok(known_roles(&names))
}

/// One row per person with their roles, for the admins' people page.
#[derive(Clone, Debug, FromRow)]
pub struct PersonWithRoles {
    pub email: String,
    pub display_name: Option<String>,
    pub last_sign_in_at: OffsetDateTime,
    pub roles: Vec<String>,
}

pub async fn list_people(db: impl PgExecutor<'_>) -> Result<Vec<PersonWithRoles>, sqlx::Error> {
    sqlx::query_as!(
        PersonWithRoles,
        r#"SELECT u.email, u.display_name, u.last_sign_in_at,
                COALESCE(array_agg(r.role ORDER BY r.role) FILTER (WHERE r.role IS NOT NULL),
                         '{}') AS "roles!"
         FROM users u LEFT JOIN user_roles r ON r.user_id = u.id
         GROUP BY u.id ORDER BY lower(u.email)"#,
    )
    .fetch_all(db)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::PgPool;

    fn alice() -> VerifiedIdentity {
        VerifiedIdentity {
            issuer: "https://issuer.test".into(),
            subject: "alice-sub".into(),
            email: "alice@example.com".into(),
            display_name: Some("Alice".into()),
        }
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn upsert_keys_people_by_issuer_and_subject(pool: PgPool) {
        let first = upsert_user(&pool, &alice()).await.unwrap();
        let renamed = VerifiedIdentity {
            email: "alice@new.example".into(),
            ..alice()
        };
        let second = upsert_user(&pool, &renamed).await.unwrap();
        assert_eq!(first.id, second.id);
        assert_eq!(second.email, "alice@new.example");
        assert!(second.last_sign_in_at >= first.last_sign_in_at);
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn the_same_subject_at_another_issuer_is_another_person(pool: PgPool) {
        let first = upsert_user(&pool, &alice()).await.unwrap();
        let elsewhere = VerifiedIdentity {
            issuer: "https://other.test".into(),
            ..alice()
        };
        let second = upsert_user(&pool, &elsewhere).await.unwrap();
        assert_ne!(first.id, second.id);
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn roles_are_granted_once_and_revoked(pool: PgPool) {
        let user = upsert_user(&pool, &alice()).await.unwrap();
        assert!(roles_of(&pool, user.id).await.unwrap().is_empty());
        assert!(grant_role(&pool, user.id, Role::Auditor).await.unwrap());
        assert!(grant_role(&pool, user.id, Role::Admin).await.unwrap());
        assert!(!grant_role(&pool, user.id, Role::Admin).await.unwrap());
        assert_eq!(
            roles_of(&pool, user.id).await.unwrap(),
            [Role::Admin, Role::Auditor]
        );
        assert!(revoke_role(&pool, user.id, Role::Admin).await.unwrap());
        assert!(!revoke_role(&pool, user.id, Role::Admin).await.unwrap());
        assert_eq!(roles_of(&pool, user.id).await.unwrap(), [Role::Auditor]);
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn every_role_the_code_knows_exists_as_data(pool: PgPool) {
        let names: Vec<String> = sqlx::query_scalar("SELECT name FROM roles ORDER BY name")
            .fetch_all(&pool)
            .await
            .unwrap();
        let mut expected: Vec<&str> = Role::ALL.iter().map(|r| r.as_str()).collect();
        expected.sort();
        assert_eq!(names, expected);
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_role_that_is_not_in_the_roles_table_is_refused(pool: PgPool) {
        let user = upsert_user(&pool, &alice()).await.unwrap();
        let err = sqlx::query("INSERT INTO user_roles (user_id, role) VALUES ($1, 'root')")
            .bind(user.id)
            .execute(&pool)
            .await
            .unwrap_err();
        let constraint = err
            .as_database_error()
            .and_then(|e| e.constraint().map(str::to_owned));
        assert_eq!(constraint.as_deref(), Some("user_roles_role_fkey"));
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn deleting_a_person_deletes_their_roles(pool: PgPool) {
        let user = upsert_user(&pool, &alice()).await.unwrap();
        grant_role(&pool, user.id, Role::Admin).await.unwrap();
        sqlx::query("DELETE FROM users WHERE id = $1")
            .bind(user.id)
            .execute(&pool)
            .await
            .unwrap();
        assert!(find_user(&pool, user.id).await.unwrap().is_none());
        assert!(roles_of(&pool, user.id).await.unwrap().is_empty());
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn people_are_listed_with_their_roles(pool: PgPool) {
        let user = upsert_user(&pool, &alice()).await.unwrap();
        grant_role(&pool, user.id, Role::Member).await.unwrap();
        grant_role(&pool, user.id, Role::Admin).await.unwrap();
        let bob = VerifiedIdentity {
            subject: "bob".into(),
            email: "bob@example.com".into(),
            ..alice()
        };
        upsert_user(&pool, &bob).await.unwrap();
        let people = list_people(&pool).await.unwrap();
        let summary: Vec<(&str, Vec<String>)> = people
            .iter()
            .map(|p| (p.email.as_str(), p.roles.clone()))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "alice@example.com",
                    vec!["admin".to_string(), "member".to_string()]
                ),
                ("bob@example.com", vec![]),
            ]
        );
    }
}
