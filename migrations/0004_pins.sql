-- A person's pinned copy of an app resource (SPEC §7): what the frame serves, byte for
-- byte, until the person refreshes it on purpose.
CREATE TABLE pins (
    user_id            uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    slug               text NOT NULL REFERENCES servers (slug) ON DELETE CASCADE,
    uri                text NOT NULL,
    bytes              bytea NOT NULL,
    sha256             text NOT NULL,
    size               bigint NOT NULL,
    meta_ui            jsonb NOT NULL DEFAULT 'null',
    server_fingerprint text NOT NULL,
    pinned_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, slug, uri)
);
