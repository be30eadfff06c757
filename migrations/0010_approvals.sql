-- Approvals of writing tools asked for by apps (SPEC §8).

-- Keys the console holds for itself. Row `approval`: the HMAC key approvals are signed
-- with, created by the first instance to start (INSERT … ON CONFLICT DO NOTHING) and read
-- by every other, so an approval minted by one instance is honoured by all of them.
-- Unused when STRAD_APPROVAL_SECRET is set.
CREATE TABLE host_secrets (
    name        text PRIMARY KEY,
    secret      bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Each approval runs its call once: spending inserts its nonce, and a second spend of the
-- same nonce conflicts. A row past `expires_at` can no longer verify, so it may be deleted.
CREATE TABLE approval_spends (
    nonce       text PRIMARY KEY,
    user_id     uuid NOT NULL,
    expires_at  timestamptz NOT NULL,
    spent_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX approval_spends_expires_at_idx ON approval_spends (expires_at);
