-- One audit append in one statement: take the chain's lock, read the last hash, hash the new
-- row and insert it. The row hash is exactly `row_hash` in app/src/audit/ssr/writer.rs (each
-- field length-prefixed as an 8-byte big-endian count; the time as 8 big-endian bytes of
-- microseconds since the epoch; the payload in jsonb's own text form), so the Rust verifier
-- checks rows written here. Called alone, the statement is its own transaction and the lock
-- ends with it; called inside a transaction, the lock holds until that commits.
CREATE FUNCTION audit_append(
    p_actor_id uuid,
    p_actor_email text,
    p_kind text,
    p_slug text,
    p_payload jsonb
) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_prev bytea;
    v_at timestamptz;
    v_micros bigint;
    v_hash bytea;
    v_id bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(8319400174281651556);
    -- A statement after the lock: its snapshot sees the last holder's committed row.
    SELECT hash INTO v_prev FROM audit_log ORDER BY id DESC LIMIT 1;
    IF v_prev IS NULL THEN
        v_prev := decode(repeat('00', 32), 'hex');
    END IF;
    v_at := clock_timestamp();
    v_micros := (extract(epoch FROM v_at) * 1000000)::bigint;
    v_hash := sha256(
        audit_field(v_prev)
        || audit_field(int8send(v_micros))
        || audit_field(convert_to(coalesce(p_actor_id::text, ''), 'UTF8'))
        || audit_field(convert_to(coalesce(p_actor_email, ''), 'UTF8'))
        || audit_field(convert_to(p_kind, 'UTF8'))
        || audit_field(convert_to(coalesce(p_slug, ''), 'UTF8'))
        || audit_field(convert_to(p_payload::text, 'UTF8'))
    );
    INSERT INTO audit_log (at, actor_id, actor_email, kind, slug, payload, prev_hash, hash)
    VALUES (v_at, p_actor_id, p_actor_email, p_kind, p_slug, p_payload, v_prev, v_hash)
    RETURNING id INTO v_id;
    RETURN v_id;
END
$$;

-- A field of the row hash: its length as 8 big-endian bytes, then the bytes.
CREATE FUNCTION audit_field(p bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE
AS $$ SELECT int8send(octet_length(p)::bigint) || p $$;
