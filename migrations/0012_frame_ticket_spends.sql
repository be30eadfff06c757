-- Frame tickets (SPEC §6) are signed and carry their own claims; what makes each one load
-- its frame once, on whichever instance serves it, is this table: spending inserts the
-- ticket's nonce, and a second spend conflicts. A row past `expires_at` can no longer verify,
-- so it is deleted. UNLOGGED: a spend costs no WAL flush on the frame route; after a
-- database crash (not a clean restart) the spends of the last few minutes are gone, and a
-- ticket issued then could load a second document — which the host page still removes
-- (one document per frame), and which still needs that person's live ticket.
CREATE UNLOGGED TABLE frame_ticket_spends (
    nonce       bytea PRIMARY KEY,
    expires_at  timestamptz NOT NULL
);

CREATE INDEX frame_ticket_spends_expires_at_idx ON frame_ticket_spends (expires_at);
