-- Periodic work that one instance does for all of them (discovery of every server): the
-- instance that moves `ran_at` forward (a conditional upsert, one row lock) runs it this
-- period; the others see it was done.
CREATE TABLE periodic_runs (
    name    text PRIMARY KEY,
    ran_at  timestamptz NOT NULL
);

-- The instances serving this database, each seen every few seconds: per-person rate limits
-- are shared out among the live ones, so all of them together allow what one would.
CREATE UNLOGGED TABLE instances (
    id          uuid PRIMARY KEY,
    name        text,
    started_at  timestamptz NOT NULL DEFAULT now(),
    seen_at     timestamptz NOT NULL DEFAULT now()
);
