-- MCP servers strad hosts, what discovery last saw on each, and the audit log.

CREATE TABLE servers (
    slug            text PRIMARY KEY,
    display_name    text NOT NULL,
    transport       text NOT NULL,
    url             text,
    command         text[],
    -- 'ui': registered by an admin; 'config': declared in strad.toml (read-only in the UI).
    source          text NOT NULL,
    -- The authority ceiling: a subset of {tools, prompts, resources, apps}.
    capabilities    text[] NOT NULL DEFAULT '{}',
    enabled         boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    last_discovery_at      timestamptz,
    last_discovery_error   text,
    last_discovery_problems jsonb NOT NULL DEFAULT '[]',
    CONSTRAINT servers_slug_check CHECK (slug ~ '^[a-z0-9-]{1,40}$'),
    CONSTRAINT servers_transport_check CHECK (
        (transport = 'http' AND url IS NOT NULL AND command IS NULL)
        OR (transport = 'stdio' AND command IS NOT NULL AND url IS NULL)),
    CONSTRAINT servers_source_check CHECK (source IN ('ui', 'config')),
    CONSTRAINT servers_stdio_from_config_check CHECK (transport <> 'stdio' OR source = 'config'),
    CONSTRAINT servers_capabilities_check
        CHECK (capabilities <@ ARRAY['tools', 'prompts', 'resources', 'apps']::text[])
);

-- One row per tool and per app resource discovery last saw, with its fingerprint and the
-- text the next change is diffed against.
CREATE TABLE server_items (
    slug        text NOT NULL REFERENCES servers (slug) ON DELETE CASCADE,
    kind        text NOT NULL,
    key         text NOT NULL,
    digest      text NOT NULL,
    size        bigint NOT NULL,
    body        bytea NOT NULL,
    info        jsonb NOT NULL DEFAULT '{}',
    seen_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (slug, kind, key),
    CONSTRAINT server_items_kind_check CHECK (kind IN ('tool', 'app_resource'))
);

-- Append-only. Each row's hash covers its content and the previous row's hash, so an
-- edited, deleted or reordered row breaks the chain (checked by `strad audit verify`).
CREATE TABLE audit_log (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    actor_id    uuid,
    actor_email text,
    kind        text NOT NULL,
    slug        text,
    payload     jsonb NOT NULL DEFAULT '{}',
    prev_hash   bytea NOT NULL,
    hash        bytea NOT NULL
);

CREATE INDEX audit_log_kind_idx ON audit_log (kind, id DESC);
CREATE INDEX audit_log_slug_idx ON audit_log (slug, id DESC);
