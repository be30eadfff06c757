//! The audit log, read and made to refuse rows.

use sqlx::PgPool;

/// Makes the audit log refuse rows of `kind` (a trigger that raises), as a database that
/// cannot take them would; `audit_rows_accepted_again` undoes it.
pub async fn audit_refuses_rows_of(pool: &PgPool, kind: &str) {
    sqlx::raw_sql(&format!(
        "CREATE FUNCTION refuse_audit_rows() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'the audit log refuses this row'; END $$;
         CREATE TRIGGER refuse_audit_rows BEFORE INSERT ON audit_log FOR EACH ROW
         WHEN (NEW.kind = '{kind}') EXECUTE FUNCTION refuse_audit_rows();"
    ))
    .execute(pool)
    .await
    .unwrap();
}

pub async fn audit_rows_accepted_again(pool: &PgPool) {
    sqlx::raw_sql("DROP TRIGGER refuse_audit_rows ON audit_log")
        .execute(pool)
        .await
        .unwrap();
}

/// The outcomes of the audit rows of `kind`, oldest first.
pub async fn audit_outcomes(pool: &PgPool, kind: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT payload->>'outcome' FROM audit_log WHERE kind = $1 ORDER BY id")
        .bind(kind)
        .fetch_all(pool)
        .await
        .unwrap()
}
