//! A server-rendered page loads each of its data once: the signed-in person and the page's
//! own. Rendering a page must not load it again (more queries, heavier pages and, on the app
//! page, frame tickets issued that nothing will use).

use crate::support::*;
use sqlx::PgPool;

/// Each page a signed-in admin can open, and how many resources it loads: the person, then
/// the page's own data.
const PAGES: &[(&str, usize)] = &[
    ("/", 2),
    ("/people", 2),
    ("/admin/servers", 2),
    ("/admin/servers/widget", 2),
    ("/admin/servers/widget/policy", 2),
    // The grants, the servers to grant and a lookup of what one person can reach.
    ("/admin/entitlements", 4),
    ("/admin/tokens", 2),
    // Their tokens and a token just minted, shown once.
    ("/tokens", 3),
    ("/audit", 2),
    ("/audit/app-changes", 2),
    ("/pins", 2),
    ("/apps/widget", 2),
    ("/servers/widget", 2),
];

/// Rounds of each page: whether a render loads a page's data again can depend on when the
/// person's data arrives, so one request per page proves little.
const ROUNDS: usize = 6;

/// The ids of the resources whose values a page carries for hydration.
fn resolved_resources(page: &str) -> Vec<u64> {
    page.split("__RESOLVED_RESOURCES[")
        .skip(1)
        .filter_map(|rest| rest.split(']').next()?.parse().ok())
        .collect()
}

#[sqlx::test(migrations = false)]
async fn each_page_loads_its_data_once(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    for round in 0..ROUNDS {
        for (path, loads) in PAGES {
            let ids = resolved_resources(&page(&app, &admin, path).await);
            assert_eq!(
                ids.len(),
                *loads,
                "{path}, round {round}: resources {ids:?}"
            );
        }
    }
}

#[sqlx::test(migrations = false)]
async fn an_app_page_issues_one_frame_ticket(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    for round in 0..ROUNDS {
        let page = page(&app, &admin, "/apps/widget").await;
        // Every ticket the page holds: in the frame's address and in the data it hydrates
        // from (a JSON string inside a script, its quotes escaped).
        let mut tickets: Vec<&str> = page
            .split("/apps/widget/frame/")
            .skip(1)
            .chain(page.split("ticket").skip(1))
            .map(|rest| rest.trim_start_matches(['\\', '"', ':']))
            .map(|rest| {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
                    .unwrap_or(rest.len());
                &rest[..end]
            })
            .filter(|ticket| ticket.len() > 20)
            .collect();
        tickets.sort_unstable();
        tickets.dedup();
        assert_eq!(tickets.len(), 1, "round {round}: {tickets:?}");
    }
}
