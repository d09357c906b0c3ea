-- Daily weather from the configured provider (weather.provider_url), kept per place and local day
-- so /stats/weather-correlation asks the provider only for days it has never answered. A place is
-- the latitude and longitude rounded to 0.1 degree, stored as whole tenths (52.5 -> 525). Only
-- complete past days are kept: today and days the provider had no value for are asked again later.
CREATE TABLE weather_days (
    latitude_e1      INTEGER NOT NULL,
    longitude_e1     INTEGER NOT NULL,
    -- the local calendar day, YYYY-MM-DD
    day              TEXT NOT NULL,
    temperature_c    REAL,
    precipitation_mm REAL,
    wind_kmh         REAL,
    fetched_at       TEXT NOT NULL,
    PRIMARY KEY (latitude_e1, longitude_e1, day)
) WITHOUT ROWID;
