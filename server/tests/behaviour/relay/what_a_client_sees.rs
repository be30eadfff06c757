//! What an MCP client sees and may do through `/mcp`: the tools, prompts and resources the
//! person may use, each relayed only from a server approved for it, and every call audited.

use super::*;

#[sqlx::test(migrations = false)]
async fn an_mcp_client_sees_calls_and_reads_what_the_person_may(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let clock = ExampleServer::start("mcp-server-basic-vanillajs").await;
    let widgets = TestServer::start().await;
    register_server(&app, &admin, "clock", &clock.url, true).await;
    register_server(&app, &admin, "widgets", &widgets.url, true).await;
    register_server(&app, &admin, "hidden", &widgets.url, true).await;
    grant(&app, &admin, "clock", LOCAL_ADMIN).await;
    grant(&app, &admin, "widgets", LOCAL_ADMIN).await;
    let (token, _) = mint(&app, &admin).await;

    let mcp = client(&app.url("/mcp"), &token).await.expect("initialize");
    let tools = mcp.list_all_tools().await.unwrap();
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"clock__get-time".to_string()), "{names:?}");
    assert!(
        names.contains(&"widgets__show-widget".to_string()),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("hidden__")),
        "not entitled: {names:?}"
    );
    assert!(
        !names.contains(&"widgets__app-only-refresh".to_string()),
        "app-only: {names:?}"
    );
    let widget = tools
        .iter()
        .find(|t| t.name == "widgets__show-widget")
        .unwrap();
    let meta = serde_json::to_value(&widget.meta).unwrap();
    assert_eq!(meta["ui"]["resourceUri"], "ui://widgets/test/widget.html");

    // A call, mapped back onto the right server, audited as an MCP client's.
    let result = mcp
        .call_tool(
            CallToolRequestParams::new("widgets__show-widget")
                .with_arguments(json!({"label": "x"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let result = serde_json::to_value(&result).unwrap();
    assert!(result.to_string().contains("widget:x"), "{result}");
    let audited: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'mcp_tool_call'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(audited, 1);

    // The app resource: the same bytes the console pins.
    let resources = mcp.list_all_resources().await.unwrap();
    let uris: Vec<String> = resources.iter().map(|r| r.uri.to_string()).collect();
    assert!(
        uris.contains(&"ui://widgets/test/widget.html".to_string()),
        "{uris:?}"
    );
    let read = mcp
        .read_resource(ReadResourceRequestParams::new(
            "ui://widgets/test/widget.html",
        ))
        .await
        .unwrap();
    let read = serde_json::to_value(&read).unwrap();
    let text = read["contents"][0]["text"].as_str().unwrap().to_owned();
    let view: Value = server_fn(&app, &admin, "apps/open", &[("slug", "widgets")])
        .await
        .json()
        .await
        .unwrap();
    let digest = app::servers::ssr::canonical::sha256_hex(text.as_bytes());
    assert_eq!(
        view["digest"], digest,
        "the relayed bytes are the pinned bytes"
    );
    assert_eq!(read["contents"][0]["uri"], "ui://widgets/test/widget.html");

    // Refusals: a forged name for another slug, an app-only tool, a slug not entitled.
    for name in [
        "hidden__show-widget",
        "widgets__app-only-refresh",
        "show-widget",
        "widgets__no-such-tool",
    ] {
        let refused = mcp.call_tool(CallToolRequestParams::new(name)).await;
        assert!(refused.is_err(), "{name}: {refused:?}");
    }
    assert!(
        mcp.read_resource(ReadResourceRequestParams::new(
            "ui://hidden/test/widget.html"
        ))
        .await
        .is_err()
    );
    let _ = mcp.cancel().await;

    // ?servers= narrows what is seen.
    let narrow = client(&app.url("/mcp?servers=clock"), &token)
        .await
        .unwrap();
    let names: Vec<String> = narrow
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["clock__get-time"]);
    let _ = narrow.cancel().await;
}

#[sqlx::test(migrations = false)]
async fn prompts_are_relayed_only_from_servers_approved_for_them(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    for (slug, capabilities) in [("talk", &["tools", "prompts"][..]), ("quiet", &["tools"])] {
        register_server_for(&app, &admin, slug, &server.url, capabilities).await;
        grant(&app, &admin, slug, LOCAL_ADMIN).await;
    }
    let (token, _) = mint(&app, &admin).await;
    let mcp = client(&app.url("/mcp"), &token).await.unwrap();
    let names: Vec<String> = mcp
        .list_all_prompts()
        .await
        .unwrap()
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    assert_eq!(names, ["talk__summarize"]);
    let got = mcp
        .get_prompt(
            rmcp::model::GetPromptRequestParams::new("talk__summarize")
                .with_arguments(json!({"topic": "pins"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert!(
        serde_json::to_value(&got)
            .unwrap()
            .to_string()
            .contains("Summarize pins.")
    );
    assert!(
        mcp.get_prompt(rmcp::model::GetPromptRequestParams::new("quiet__summarize"))
            .await
            .is_err()
    );
    let _ = mcp.cancel().await;
}

#[sqlx::test(migrations = false)]
async fn plain_resources_and_templates_are_relayed_only_when_approved(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    for (slug, capabilities) in [
        ("docs", &["tools", "resources"][..]),
        ("closed", &["tools"]),
    ] {
        register_server_for(&app, &admin, slug, &server.url, capabilities).await;
        grant(&app, &admin, slug, LOCAL_ADMIN).await;
    }
    let (token, _) = mint(&app, &admin).await;
    let mcp = client(&app.url("/mcp"), &token).await.unwrap();
    let uris: Vec<String> = mcp
        .list_all_resources()
        .await
        .unwrap()
        .iter()
        .map(|r| r.uri.to_string())
        .collect();
    assert_eq!(
        uris,
        ["strad://docs/file:///test/readme.txt"],
        "no app resources without the apps approval, nothing from `closed`"
    );
    let templates: Vec<String> = mcp
        .list_all_resource_templates()
        .await
        .unwrap()
        .iter()
        .map(|t| t.uri_template.to_string())
        .collect();
    assert_eq!(templates, ["strad://docs/file:///test/notes/{name}"]);
    for (uri, text) in [
        (
            "strad://docs/file:///test/readme.txt",
            "not an app resource",
        ),
        ("strad://docs/file:///test/notes/monday", "note monday"),
    ] {
        let read = mcp
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap();
        let read = serde_json::to_value(&read).unwrap();
        assert_eq!(read["contents"][0]["uri"], uri);
        assert!(read.to_string().contains(text), "{read}");
    }
    for refused in [
        "strad://closed/file:///test/readme.txt",
        "strad://docs/ui://test/widget.html",
        "ui://docs/test/widget.html",
        "file:///test/readme.txt",
        "strad://nobody/file:///test/readme.txt",
    ] {
        assert!(
            mcp.read_resource(ReadResourceRequestParams::new(refused))
                .await
                .is_err(),
            "{refused}"
        );
    }
    let _ = mcp.cancel().await;
}

/// A call through `/mcp` whose audit row cannot be committed answers an error, never the
/// server's result; once rows commit again, calls answer as usual.
#[sqlx::test(migrations = false)]
async fn a_relayed_call_whose_audit_row_cannot_be_committed_is_an_error(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (server, token) = widgets_and_token(&app, &admin).await;
    let mcp = client(&app.url("/mcp"), &token).await.unwrap();
    audit_refuses_rows_of(&app.pool, "mcp_tool_call").await;
    let show = |label: &str| {
        CallToolRequestParams::new("widgets__show-widget")
            .with_arguments(json!({"label": label}).as_object().unwrap().clone())
    };
    let refused = mcp.call_tool(show("secret")).await;
    assert!(refused.is_err(), "{refused:?}");
    assert!(!format!("{refused:?}").contains("widget:secret"));
    let called = server.state().await.unwrap()["calls"]["show-widget"].as_u64();
    assert_eq!(called, Some(1), "the call ran upstream");

    audit_rows_accepted_again(&app.pool).await;
    let answered = serde_json::to_value(mcp.call_tool(show("x")).await.unwrap()).unwrap();
    assert!(answered.to_string().contains("widget:x"), "{answered}");
    let _ = mcp.cancel().await;
}
