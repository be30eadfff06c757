-- What a request's authority is read from is also remembered in memory for a moment
-- (server/src/memo.rs). Every change to it is announced on the channel `strad_auth`, so
-- every strad on this database forgets what it remembered as soon as the change commits.
-- An update that touches only bookkeeping columns (the trigger's arguments: a token's
-- last use, a server's last discovery) announces nothing.
CREATE FUNCTION strad_auth_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    ignored text[] := coalesce(TG_ARGV::text[], '{}');
BEGIN
    IF TG_OP = 'UPDATE' AND (to_jsonb(OLD) - ignored) = (to_jsonb(NEW) - ignored) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_notify('strad_auth', 'all');
    RETURN NULL;
END
$$;

CREATE TRIGGER users_auth_changed AFTER INSERT OR UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION strad_auth_changed();
CREATE TRIGGER user_roles_auth_changed AFTER INSERT OR UPDATE OR DELETE ON user_roles
    FOR EACH ROW EXECUTE FUNCTION strad_auth_changed();
CREATE TRIGGER entitlements_auth_changed AFTER INSERT OR UPDATE OR DELETE ON entitlements
    FOR EACH ROW EXECUTE FUNCTION strad_auth_changed();
CREATE TRIGGER servers_auth_changed AFTER INSERT OR UPDATE OR DELETE ON servers
    FOR EACH ROW EXECUTE FUNCTION strad_auth_changed(
        'last_discovery_at', 'last_discovery_error', 'last_discovery_problems');
CREATE TRIGGER server_items_auth_changed AFTER INSERT OR UPDATE OR DELETE ON server_items
    FOR EACH ROW EXECUTE FUNCTION strad_auth_changed('seen_at');
CREATE TRIGGER tool_policies_auth_changed AFTER INSERT OR UPDATE OR DELETE ON tool_policies
    FOR EACH ROW EXECUTE FUNCTION strad_auth_changed();
CREATE TRIGGER read_only_marks_auth_changed AFTER INSERT OR UPDATE OR DELETE ON read_only_marks
    FOR EACH ROW EXECUTE FUNCTION strad_auth_changed();
CREATE TRIGGER login_tokens_auth_changed AFTER INSERT OR UPDATE OR DELETE ON login_tokens
    FOR EACH ROW EXECUTE FUNCTION strad_auth_changed('last_used_at');
CREATE TRIGGER pins_auth_changed AFTER INSERT OR UPDATE OR DELETE ON pins
    FOR EACH ROW EXECUTE FUNCTION strad_auth_changed();

-- TRUNCATE skips row triggers: announce it once per statement.
CREATE FUNCTION strad_auth_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('strad_auth', 'all');
    RETURN NULL;
END
$$;

CREATE TRIGGER users_auth_truncated AFTER TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION strad_auth_truncated();
CREATE TRIGGER user_roles_auth_truncated AFTER TRUNCATE ON user_roles
    FOR EACH STATEMENT EXECUTE FUNCTION strad_auth_truncated();
CREATE TRIGGER entitlements_auth_truncated AFTER TRUNCATE ON entitlements
    FOR EACH STATEMENT EXECUTE FUNCTION strad_auth_truncated();
CREATE TRIGGER servers_auth_truncated AFTER TRUNCATE ON servers
    FOR EACH STATEMENT EXECUTE FUNCTION strad_auth_truncated();
CREATE TRIGGER server_items_auth_truncated AFTER TRUNCATE ON server_items
    FOR EACH STATEMENT EXECUTE FUNCTION strad_auth_truncated();
CREATE TRIGGER tool_policies_auth_truncated AFTER TRUNCATE ON tool_policies
    FOR EACH STATEMENT EXECUTE FUNCTION strad_auth_truncated();
CREATE TRIGGER read_only_marks_auth_truncated AFTER TRUNCATE ON read_only_marks
    FOR EACH STATEMENT EXECUTE FUNCTION strad_auth_truncated();
CREATE TRIGGER login_tokens_auth_truncated AFTER TRUNCATE ON login_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION strad_auth_truncated();
CREATE TRIGGER pins_auth_truncated AFTER TRUNCATE ON pins
    FOR EACH STATEMENT EXECUTE FUNCTION strad_auth_truncated();
