-- Birds the hub left out because they are not expected at the satellite's place this week
-- (`not_expected_action = drop`), counted per satellite and hour, so Live and a satellite's page
-- can say how many in the last 24 hours and why (issue 51, defect 18). Rows older than two days
-- are removed as new ones are written.
CREATE TABLE not_expected_hours (
    satellite_pk INTEGER NOT NULL REFERENCES satellites(pk) ON DELETE CASCADE,
    hour         INTEGER NOT NULL, -- the hour's start, Unix ms
    count        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (satellite_pk, hour)
) STRICT, WITHOUT ROWID;
