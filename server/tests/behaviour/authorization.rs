//! Every route and server function that exists: anonymous gets 401 (or, for a page, a
//! redirect to sign-in); a signed-in person without the role gets 403.

use crate::support::*;
use sqlx::PgPool;

/// A server function, the roles that may call it (empty: any signed-in person) and a body.
type ServerFn = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

/// Server functions and the roles that may call them.
const SERVER_FNS: &[ServerFn] = &[
    ("people", &["admin"], &[]),
    ("servers/list", &["admin"], &[]),
    ("servers/get", &["admin"], &[("slug", "x")]),
    (
        "servers/register",
        &["admin"],
        &[
            ("slug", "made-by-test"),
            ("display_name", "x"),
            ("url", "http://127.0.0.1:9/mcp"),
        ],
    ),
    (
        "servers/update",
        &["admin"],
        &[
            ("slug", "x"),
            ("display_name", "x"),
            ("url", "http://127.0.0.1:9/mcp"),
        ],
    ),
    ("servers/refresh", &["admin"], &[("slug", "x")]),
    ("servers/app-changes", &["admin", "auditor"], &[]),
    (
        "entitlements/grant",
        &["admin"],
        &[("slug", "x"), ("grantee", "a@example.com")],
    ),
    ("entitlements/revoke", &["admin"], &[("id", "0")]),
    ("entitlements/list", &["admin"], &[]),
    (
        "entitlements/reachable",
        &["admin"],
        &[("email", "a@example.com")],
    ),
    ("entitlements/mine", &[], &[]),
    ("policy/get", &["admin"], &[("slug", "x")]),
    (
        "policy/set",
        &["admin"],
        &[
            ("slug", "x"),
            ("playground_tools", ""),
            ("app_tools", ""),
            ("writing_from_apps", "deny"),
        ],
    ),
    (
        "policy/mark",
        &["admin"],
        &[("slug", "x"), ("tool", "t"), ("read_only", "true")],
    ),
    (
        "roles/set",
        &["admin"],
        &[
            ("email", "nobody@example.com"),
            ("role", "auditor"),
            ("granted", "true"),
        ],
    ),
    ("tokens/mint", &[], &[("name", "t"), ("days", "1")]),
    ("tokens/mine", &[], &[]),
    ("tokens/all", &["admin"], &[]),
    (
        "tokens/revoke",
        &[],
        &[("id", "00000000-0000-0000-0000-000000000000")],
    ),
    ("audit/list", &["admin", "auditor"], &[]),
    ("audit/verify", &["admin", "auditor"], &[]),
];

const PAGES: &[(&str, &[&str])] = &[
    ("/", &[]),
    ("/people", &["admin"]),
    ("/admin/servers", &["admin"]),
    ("/admin/servers/x", &["admin"]),
    ("/audit/app-changes", &["admin", "auditor"]),
    ("/audit", &["admin", "auditor"]),
    ("/admin/entitlements", &["admin"]),
    ("/admin/tokens", &["admin"]),
    ("/admin/servers/x/policy", &["admin"]),
    ("/tokens", &[]),
];

#[sqlx::test(migrations = false)]
async fn anonymous_callers_get_401_from_every_protected_server_function(pool: PgPool) {
    let app = spawn_app(pool).await;
    for (name, _, form) in SERVER_FNS {
        let response = server_fn(&app, &app.client, name, form).await;
        assert_eq!(response.status(), 401, "{name}");
    }
}

#[sqlx::test(migrations = false)]
async fn anonymous_visitors_are_sent_to_sign_in_from_every_page(pool: PgPool) {
    let app = spawn_app(pool).await;
    for (path, _) in PAGES {
        let response = app.get(path).await;
        assert_eq!(response.status(), 302, "{path}");
        assert!(location(&response).starts_with("/sign-in?next="), "{path}");
    }
}

#[sqlx::test(migrations = false)]
async fn a_person_without_the_role_gets_403_everywhere(pool: PgPool) {
    let app = spawn_app(pool).await;
    for held in [&[][..], &["auditor"][..], &["admin"][..]] {
        let browser = signed_in_with(&app, held).await;
        for (name, needed, form) in SERVER_FNS {
            let allowed = needed.is_empty() || needed.iter().any(|r| held.contains(r));
            let status = server_fn(&app, &browser, name, form)
                .await
                .status()
                .as_u16();
            if allowed {
                assert_ne!(status, 403, "{name} with {held:?}");
                assert_ne!(status, 401, "{name} with {held:?}");
            } else {
                assert_eq!(status, 403, "{name} with {held:?}");
            }
        }
        for (path, needed) in PAGES {
            let allowed = needed.is_empty() || needed.iter().any(|r| held.contains(r));
            let status = browser
                .get(app.url(path))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16();
            let expected = match (allowed, *path) {
                (false, _) => 403,
                (true, "/admin/servers/x" | "/admin/servers/x/policy") => 404,
                (true, _) => 200,
            };
            assert_eq!(status, expected, "{path} with {held:?}");
        }
        // Put the roles back for the next round.
        sqlx::query("INSERT INTO user_roles (user_id, role) SELECT id, r FROM users, unnest(ARRAY['admin','auditor']) r ON CONFLICT DO NOTHING")
            .execute(&app.pool)
            .await
            .unwrap();
    }
}

#[sqlx::test(migrations = false)]
async fn a_server_that_does_not_exist_is_404_for_an_admin(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_with(&app, &["admin"]).await;
    for name in ["servers/get", "servers/refresh"] {
        assert_eq!(
            server_fn(&app, &admin, name, &[("slug", "nope")])
                .await
                .status(),
            404,
            "{name}"
        );
    }
    let update = [
        ("slug", "nope"),
        ("display_name", "x"),
        ("url", "http://127.0.0.1:9/mcp"),
    ];
    assert_eq!(
        server_fn(&app, &admin, "servers/update", &update)
            .await
            .status(),
        404
    );
}

#[sqlx::test(migrations = false)]
async fn bad_registrations_are_refused_at_the_field(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_with(&app, &["admin"]).await;
    for (slug, url, field) in [
        ("Bad Slug", "http://127.0.0.1:9/mcp", "slug"),
        ("ok", "javascript:alert(1)", "url"),
        ("ok", "file:///etc/passwd", "url"),
        ("ok", "http://user:pw@127.0.0.1:9/mcp", "url"),
    ] {
        let form = [("slug", slug), ("display_name", "x"), ("url", url)];
        let response = server_fn(&app, &admin, "servers/register", &form).await;
        assert_eq!(response.status(), 400, "{slug} {url}");
        assert!(
            response.text().await.unwrap().contains(field),
            "{slug} {url}"
        );
    }
    let taken = [
        ("slug", "dup"),
        ("display_name", "x"),
        ("url", "http://127.0.0.1:9/mcp"),
    ];
    assert_eq!(
        server_fn(&app, &admin, "servers/register", &taken)
            .await
            .status(),
        200
    );
    let response = server_fn(&app, &admin, "servers/register", &taken).await;
    assert_eq!(response.status(), 400);
    assert!(response.text().await.unwrap().contains("already taken"));
}

#[sqlx::test(migrations = false)]
async fn registering_and_changing_a_server_is_audited_in_the_same_transaction(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_with(&app, &["admin"]).await;
    let form = [
        ("slug", "audited"),
        ("display_name", "A"),
        ("url", "http://127.0.0.1:9/mcp"),
        ("cap_tools", "on"),
    ];
    server_fn(&app, &admin, "servers/register", &form).await;
    let form = [
        ("slug", "audited"),
        ("display_name", "B"),
        ("url", "http://127.0.0.1:9/mcp"),
        ("cap_apps", "on"),
    ];
    server_fn(&app, &admin, "servers/update", &form).await;
    let rows: Vec<(String, Option<String>, serde_json::Value)> = sqlx::query_as(
        "SELECT kind, actor_email, payload FROM audit_log WHERE slug = 'audited' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].0, "server_registered");
    assert_eq!(rows[0].1.as_deref(), Some("admin@localhost"));
    assert_eq!(rows[0].2["capabilities"], serde_json::json!(["tools"]));
    assert_eq!(rows[1].0, "server_changed");
    assert_eq!(rows[1].2["old"]["display_name"], "A");
    assert_eq!(
        rows[1].2["new"]["capabilities"],
        serde_json::json!(["apps"])
    );
    assert_eq!(
        rows[1].2["new"]["enabled"], false,
        "an unchecked box disables"
    );
}

#[sqlx::test(migrations = false)]
async fn a_server_from_the_configuration_file_is_read_only_in_the_ui(pool: PgPool) {
    let file = "[[servers]]\nslug = \"pinned\"\ncommand = [\"true\"]\ncapabilities = [\"tools\"]\n";
    let app = spawn_app_with_file(pool, file, &[("STRAD_DISCOVERY_INTERVAL_SECONDS", "0")]).await;
    let admin = signed_in_with(&app, &["admin"]).await;
    let form = [
        ("slug", "pinned"),
        ("display_name", "x"),
        ("url", "http://127.0.0.1:9/mcp"),
        ("enabled", "on"),
    ];
    let response = server_fn(&app, &admin, "servers/update", &form).await;
    assert_eq!(response.status(), 400);
    let transport: String =
        sqlx::query_scalar("SELECT transport FROM servers WHERE slug = 'pinned'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(transport, "stdio");
    let page = page(&app, &admin, "/admin/servers/pinned").await;
    assert!(page.contains("declared in the configuration file"));
}
