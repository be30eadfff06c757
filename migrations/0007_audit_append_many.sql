-- Several audit appends in one statement, in the order given: one transaction, so one
-- commit (one wait for the disk) for rows that arrived together. Each is `audit_append`,
-- so each row is chained to the one before it exactly as when appended alone.
CREATE FUNCTION audit_append_many(
    p_actor_ids uuid[],
    p_actor_emails text[],
    p_kinds text[],
    p_slugs text[],
    p_payloads jsonb[]
) RETURNS SETOF bigint
LANGUAGE plpgsql
AS $$
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_kinds, 1), 0) LOOP
        RETURN NEXT audit_append(
            p_actor_ids[i], p_actor_emails[i], p_kinds[i], p_slugs[i], p_payloads[i]);
    END LOOP;
END
$$;
