-- `audit_append_many` again, doing once per batch what 0007 did once per row: the chain's
-- lock is taken and the last hash read once, each row's hash is carried to the next in a
-- variable, and the rows go in with one INSERT. Each row's id is drawn in the loop, in the
-- chain's order, under the lock every writer of the chain takes before drawing one, so the
-- ids stay in chain order. Rows, hashes and ids are exactly those `audit_append` (0005)
-- would write called once per row in order.
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
    v_prev bytea;
    v_at timestamptz;
    v_ids_from regclass := pg_get_serial_sequence('audit_log', 'id')::regclass;
    v_ids bigint[] := '{}';
    v_ats timestamptz[] := '{}';
    v_prevs bytea[] := '{}';
    v_hashes bytea[] := '{}';
BEGIN
    IF coalesce(array_length(p_kinds, 1), 0) = 0 THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(8319400174281651556);
    -- A statement after the lock: its snapshot sees the last holder's committed row.
    SELECT hash INTO v_prev FROM audit_log ORDER BY id DESC LIMIT 1;
    v_prev := coalesce(v_prev, decode(repeat('00', 32), 'hex'));
    FOR i IN 1 .. array_length(p_kinds, 1) LOOP
        v_at := clock_timestamp();
        v_ids := v_ids || nextval(v_ids_from);
        v_ats := v_ats || v_at;
        v_prevs := v_prevs || v_prev;
        v_prev := sha256(
            audit_field(v_prev)
            || audit_field(int8send((extract(epoch FROM v_at) * 1000000)::bigint))
            || audit_field(convert_to(coalesce(p_actor_ids[i]::text, ''), 'UTF8'))
            || audit_field(convert_to(coalesce(p_actor_emails[i], ''), 'UTF8'))
            || audit_field(convert_to(p_kinds[i], 'UTF8'))
            || audit_field(convert_to(coalesce(p_slugs[i], ''), 'UTF8'))
            || audit_field(convert_to(p_payloads[i]::text, 'UTF8'))
        );
        v_hashes := v_hashes || v_prev;
    END LOOP;
    INSERT INTO audit_log (id, at, actor_id, actor_email, kind, slug, payload, prev_hash, hash)
    SELECT * FROM unnest(v_ids, v_ats, p_actor_ids, p_actor_emails, p_kinds, p_slugs,
                         p_payloads, v_prevs, v_hashes);
    RETURN QUERY SELECT unnest(v_ids);
END
$$;
