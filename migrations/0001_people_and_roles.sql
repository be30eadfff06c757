-- People and their roles. A person is keyed by the issuer that vouched for them and their
-- subject there; email and name follow the issuer. Roles are data, not code.

CREATE TABLE roles (
    name        text PRIMARY KEY,
    description text NOT NULL
);

INSERT INTO roles (name, description) VALUES
    ('member',  'Signs in, uses the servers and apps they are entitled to'),
    ('admin',   'Registers servers, approves capabilities, grants entitlements and policies'),
    ('auditor', 'Reads and exports the audit and app-change logs; changes nothing');

CREATE TABLE users (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    issuer          text NOT NULL,
    subject         text NOT NULL,
    email           text NOT NULL,
    display_name    text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_sign_in_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT users_issuer_subject_key UNIQUE (issuer, subject)
);

CREATE INDEX users_email_idx ON users (lower(email));

CREATE TABLE user_roles (
    user_id    uuid NOT NULL,
    role       text NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, role),
    CONSTRAINT user_roles_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
    CONSTRAINT user_roles_role_fkey FOREIGN KEY (role) REFERENCES roles (name)
);
