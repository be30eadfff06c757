-- Each server's open-link allow-list (SPEC §6 `ui/open-link`): hosts its app may open
-- without the person being asked, set by an admin. Lowercase ASCII host names, IDNA-encoded,
-- optionally `*.`-prefixed; strad parses them before storing. Empty: every link asks first.
ALTER TABLE servers ADD COLUMN link_hosts text[] NOT NULL DEFAULT '{}';
