-- A row is appended by one INSERT that strad sends itself, not by a PL/pgSQL function: the
-- function's per-call cost (its statements and expressions set up again in each
-- transaction, the arrays, the returned set) was most of what PostgreSQL spent on a tool
-- call's row. Two pieces make that INSERT, and the functions below use them too, so the
-- chain's lock and a row's hash are each written once in SQL:
--
-- `audit_chain_head` takes the chain's lock, then reads the last row's hash and the time of
-- the next row. It is a function of its own because the read must be a statement after the
-- lock: an INSERT's own snapshot is taken before it runs, so it could miss the row of the
-- lock's last holder, and the chain would fork.
--
-- `audit_row_hash` is a row's hash, exactly `row_hash` in app/src/audit/ssr/writer.rs (as
-- 0005 wrote it). It is plain SQL, so the planner writes it into the statement that calls
-- it (no call at run time).
CREATE FUNCTION audit_chain_head(OUT prev bytea, OUT at timestamptz)
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(8319400174281651556);
    -- A statement after the lock: its snapshot sees the last holder's committed row.
    SELECT l.hash INTO prev FROM audit_log l ORDER BY l.id DESC LIMIT 1;
    prev := coalesce(prev, decode(repeat('00', 32), 'hex'));
    at := clock_timestamp();
END
$$;

CREATE FUNCTION audit_row_hash(
    p_prev bytea,
    p_at timestamptz,
    p_actor_id uuid,
    p_actor_email text,
    p_kind text,
    p_slug text,
    p_payload jsonb
) RETURNS bytea
LANGUAGE sql STABLE
AS $$
    SELECT sha256(
        audit_field(p_prev)
        || audit_field(int8send((extract(epoch FROM p_at) * 1000000)::bigint))
        || audit_field(convert_to(coalesce(p_actor_id::text, ''), 'UTF8'))
        || audit_field(convert_to(coalesce(p_actor_email, ''), 'UTF8'))
        || audit_field(convert_to(p_kind, 'UTF8'))
        || audit_field(convert_to(coalesce(p_slug, ''), 'UTF8'))
        || audit_field(convert_to(p_payload::text, 'UTF8'))
    )
$$;

-- One row, as strad's own INSERT writes it, for callers that append from SQL.
CREATE OR REPLACE FUNCTION audit_append(
    p_actor_id uuid,
    p_actor_email text,
    p_kind text,
    p_slug text,
    p_payload jsonb
) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_id bigint;
BEGIN
    INSERT INTO audit_log (at, actor_id, actor_email, kind, slug, payload, prev_hash, hash)
    SELECT h.at, p_actor_id, p_actor_email, p_kind, p_slug, p_payload, h.prev,
           audit_row_hash(h.prev, h.at, p_actor_id, p_actor_email, p_kind, p_slug, p_payload)
    FROM audit_chain_head() AS h
    RETURNING id INTO v_id;
    RETURN v_id;
END
$$;

-- Several rows under one lock, in the order given, each chained to the one before it, their
-- ids drawn in chain order (as 0008 did).
CREATE OR REPLACE FUNCTION audit_append_many(
    p_actor_ids uuid[],
    p_actor_emails text[],
    p_kinds text[],
    p_slugs text[],
    p_payloads jsonb[]
) RETURNS SETOF bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_head record;
    v_prev bytea;
    v_at timestamptz;
    v_ids bigint[] := '{}';
    v_ats timestamptz[] := '{}';
    v_prevs bytea[] := '{}';
    v_hashes bytea[] := '{}';
BEGIN
    IF coalesce(array_length(p_kinds, 1), 0) = 0 THEN
        RETURN;
    END IF;
    SELECT * INTO v_head FROM audit_chain_head();
    v_prev := v_head.prev;
    v_at := v_head.at;
    FOR i IN 1 .. array_length(p_kinds, 1) LOOP
        IF i > 1 THEN
            v_at := clock_timestamp();
        END IF;
        v_ids := v_ids || nextval('audit_log_id_seq'::regclass);
        v_ats := v_ats || v_at;
        v_prevs := v_prevs || v_prev;
        v_prev := audit_row_hash(v_prev, v_at, p_actor_ids[i], p_actor_emails[i], p_kinds[i],
                                 p_slugs[i], p_payloads[i]);
        v_hashes := v_hashes || v_prev;
    END LOOP;
    INSERT INTO audit_log (id, at, actor_id, actor_email, kind, slug, payload, prev_hash, hash)
    SELECT * FROM unnest(v_ids, v_ats, p_actor_ids, p_actor_emails, p_kinds, p_slugs,
                         p_payloads, v_prevs, v_hashes);
    RETURN QUERY SELECT unnest(v_ids);
END
$$;
