-- Why a satellite's last update failed, as the satellite reported it in its heartbeat (the update
-- command's exit status and last lines). Cleared by the next update request and by reaching the
-- target version.
ALTER TABLE satellites ADD COLUMN update_error TEXT;
