-- Share links with a record (issue 48). A share token used to be an HMAC over the detection and
-- an expiry, stored nowhere: bound to no one, revocable only by rotating the JWT secret, and each
-- new one moved the detection's `shared_until` (which kept its audio from retention) further out.
--
-- Now every link is a row: its team, its detection, who made it, when, until when, and when it
-- was revoked. The token names the row (and is still signed). A link works while it is neither
-- revoked nor expired and its maker is an unblocked member of its team (or a platform admin);
-- deleting the maker's account deletes their links. Retention keeps a chunk's audio while one of
-- its detections has such a link.
--
-- Tokens of the old shape are not carried over: they verify no more (they named no maker, and
-- lived at most 30 days). `detections.shared_until` is no longer read; it is cleared here.

CREATE TABLE share_links (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    detection_pk INTEGER NOT NULL REFERENCES detections(pk) ON DELETE CASCADE,
    maker_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    revoked_at   TEXT
) STRICT;
CREATE INDEX share_links_detection ON share_links(detection_pk, expires_at);
CREATE INDEX share_links_maker ON share_links(maker_id);

UPDATE detections SET shared_until = NULL WHERE shared_until IS NOT NULL;
