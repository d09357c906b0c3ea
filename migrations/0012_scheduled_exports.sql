-- Scheduled exports (SPEC 2.17, 4.7): a team's export file made on a cron schedule and sent to
-- one of its alert channels through the alert delivery outbox.

CREATE TABLE scheduled_exports (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    format           TEXT NOT NULL CHECK (format IN ('csv', 'json', 'checklist', 'observation')),
    -- The export filters as checked JSON (camelCase, the names of the export's query string).
    filters_json     TEXT NOT NULL DEFAULT '{}',
    -- Five fields, as the user wrote them; evaluated in `timezone` (an IANA name).
    cron             TEXT NOT NULL,
    timezone         TEXT NOT NULL,
    -- A deleted channel leaves the export in place, without a channel: its runs fail and say so.
    channel_id       TEXT REFERENCES alert_channels(id) ON DELETE SET NULL,
    enabled          INTEGER NOT NULL DEFAULT 1,
    -- When it runs next. A run moves it to the next time after the run, so a hub that was down
    -- across several times runs a missed schedule once.
    next_run_at      TEXT NOT NULL,
    last_run_at      TEXT,
    -- sending (in the outbox, perhaps retrying), delivered, failed (render, outbox or delivery).
    last_status      TEXT CHECK (last_status IN ('sending', 'delivered', 'failed')),
    last_error       TEXT,
    -- The outbox row of the last run; its outcome is copied here by the trigger below.
    last_delivery_id TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX scheduled_exports_tenant ON scheduled_exports(tenant_id, name);
CREATE INDEX scheduled_exports_due ON scheduled_exports(enabled, next_run_at);
CREATE INDEX scheduled_exports_delivery ON scheduled_exports(last_delivery_id) WHERE last_delivery_id IS NOT NULL;

-- An outbox row that carries a file: its name (the mail attachment's, the webhook's
-- Content-Disposition). NULL for alert notifications, which behave as before.
ALTER TABLE alert_deliveries ADD COLUMN file_name TEXT;

-- Each attempt's outcome on an export's delivery becomes the export's last status, so the
-- status stays true after the outbox prunes the row.
CREATE TRIGGER scheduled_export_delivery_outcome AFTER UPDATE OF status ON alert_deliveries
WHEN NEW.file_name IS NOT NULL
BEGIN
    UPDATE scheduled_exports
    SET last_status = CASE NEW.status WHEN 'delivered' THEN 'delivered' WHEN 'failed' THEN 'failed' ELSE 'sending' END,
        last_error = NEW.last_error
    WHERE last_delivery_id = NEW.id;
END;
