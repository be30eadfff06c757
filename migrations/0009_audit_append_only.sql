-- The audit log is append-only in the database itself (SPEC §10): an UPDATE, DELETE or
-- TRUNCATE of `audit_log` is refused whoever sends it, so neither strad nor a role granted
-- rights on the table can rewrite history with an ordinary statement. The table's owner (the
-- role strad migrates as) and a superuser can still disable these triggers, which is why the
-- hash chain, and its head written down elsewhere (`strad audit verify` prints it), still
-- matter: they detect what the trigger cannot stop.
CREATE FUNCTION audit_log_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation', CONSTRAINT = 'audit_log_append_only';
END
$$;

CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_refuse_change();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse_change();
