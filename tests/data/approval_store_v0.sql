BEGIN TRANSACTION;
CREATE TABLE tooluse_resumed (
    pause TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    decisions TEXT NOT NULL,
    at REAL NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL
);
INSERT INTO "tooluse_resumed" VALUES('saved-0f3a','pay the rent','["c3"]',1.7963132446008250714e+09,24904,'vm');
COMMIT;
