-- The offers image (store/image.go): every current offer of a small catalogue (at most
-- imageMaxOffers) encoded in one row, rebuilt by each write transaction of current
-- offers, so one-shot reads decode one row instead of stepping through hundreds.
-- version is the id of the newest successful refresh run when it was built; a reader
-- uses it only while that is still the newest, else it reads the tables.
CREATE TABLE offers_image (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL,
    data    BLOB    NOT NULL
);
