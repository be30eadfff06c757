-- Who may use which server, how its tools may be used, and personal login tokens.

-- A grant of one slug to a person (by email) or to everyone in an email domain.
CREATE TABLE entitlements (
    id          bigserial PRIMARY KEY,
    slug        text NOT NULL REFERENCES servers (slug) ON DELETE CASCADE,
    email       text,
    domain      text,
    granted_by  uuid REFERENCES users (id) ON DELETE SET NULL,
    granted_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT entitlements_one_grantee_check CHECK ((email IS NULL) <> (domain IS NULL)),
    CONSTRAINT entitlements_lower_check CHECK (email = lower(email) OR domain = lower(domain))
);

CREATE UNIQUE INDEX entitlements_slug_email_key ON entitlements (slug, email) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX entitlements_slug_domain_key ON entitlements (slug, domain) WHERE domain IS NOT NULL;
CREATE INDEX entitlements_email_idx ON entitlements (email);
CREATE INDEX entitlements_domain_idx ON entitlements (domain);

-- Per slug: which tools each surface may call (NULL = all of them) and what an app's
-- request for a writing tool does. A slug without a row has the defaults: all tools from
-- the playground, all from apps, writing tools from apps denied.
CREATE TABLE tool_policies (
    slug              text PRIMARY KEY REFERENCES servers (slug) ON DELETE CASCADE,
    playground_tools  text[],
    app_tools         text[],
    writing_from_apps text NOT NULL DEFAULT 'deny',
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tool_policies_writing_check CHECK (writing_from_apps IN ('deny', 'ask'))
);

-- An admin's mark that a tool is read-only, valid for the tool definition it was made on:
-- a new fingerprint clears it.
CREATE TABLE read_only_marks (
    slug       text NOT NULL REFERENCES servers (slug) ON DELETE CASCADE,
    tool       text NOT NULL,
    digest     text NOT NULL,
    marked_by  uuid REFERENCES users (id) ON DELETE SET NULL,
    marked_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (slug, tool)
);

-- Personal login tokens: only a SHA-256 of the secret is stored.
CREATE TABLE login_tokens (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text NOT NULL,
    hash         bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    CONSTRAINT login_tokens_hash_key UNIQUE (hash)
);

CREATE INDEX login_tokens_user_idx ON login_tokens (user_id);
CREATE INDEX audit_log_actor_at_idx ON audit_log (lower(actor_email), id DESC);
CREATE INDEX audit_log_at_idx ON audit_log (at);
