package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// releasedMigrations pins the SHA-256 of every migration file. Released
// migrations are immutable: a change to one is a new file, and a new file
// needs its pin here (sha256sum sqlstore/migrations/NNNN_*.sql).
var releasedMigrations = map[string]string{
	"0001_ingest.sql":                     "c540763a01255480cf357a224eb0651de708b48783382b73f0d2f4ce7018e500",
	"0003_publish.sql":                    "376c9bae1afcc6c2518ae362a617037a87e4a6599b4be0d75097ec2215a3a53c",
	"0004_outbox.sql":                     "22b23b25036254f6381695ca3f85e48a6a6b383a14479c26b18102fffee88ea0",
	"0005_documents.sql":                  "52bb5b888692d0bd21136ad83423270c126d82c3e58ba57f52c3eb48dcdeb97f",
	"0006_outbox_origin.sql":              "255ac38bc4a0a29f37c2f075f415019f4b61e57a80aa430d9f92c3960dd811ea",
	"0007_secrets_auth.sql":               "270a902b2e322cd86fb33b087403c0e9824226ab9f2e1725a989eb4dd93cbecb",
	"0009_search.postgres.sql":            "cc3b27f39c2c25bc87c4fa9ec09c274cbba4ba14e29d1ab0242af2d372811544",
	"0009_search.sqlite.sql":              "6bb03a46a58200ecefe3420d2de2a268c82d097cec971aba173d2d328fbc2537",
	"0010_throughput.sql":                 "81b8eff944175a39b16721bffddf8355e48b996bceadac4ba958f34e6879d6f5",
	"0012_scaleout.sql":                   "94b7c219856789f1fbec601356f2d2c507fb395942b9e7b3a7c508dc1523cdc3",
	"0014_channel_template.sql":           "720ba3425bbf8d001da2d70f05242d3fb36e14582117f8dab00b4c2fbde59a47",
	"0015_source_settings.sql":            "9b1945dca9326a359598d2f9bb7214b79b366c138b6d11380e15d0675cedae54",
	"0016_audit.sql":                      "d8de8f79a6d389624f5e66676338541dad14098799d29a6d78ae5a2dee4298c8",
	"0017_source_lifecycle.sql":           "9af456ef9a96d3ecbb274f76055dc34793f5ab9794e7c59a0293207e50694e80",
	"0018_outbox_audit.sql":               "bd3425f38b992acbc613796e64d821adf6dba97c708b623a7a3a9a1a0ed5fbcc",
	"0019_content_actions.sql":            "302521104097dca10563a8e1e5132d995ff2845fb4bb1b76dbc6de4d882e75e4",
	"0020_channel_template_audit.sql":     "b7639b6c31ba18784a2d255b3bd593c99a1b0664d2ca629dd9e872b1a47946a1",
	"0021_summaries_listing.sql":          "7e8fc005152717f9094cb3aaaa21d95b1a9db025e9dcc652a735e3fbb0928546",
	"0022_page_format.sql":                "5fb5e58e271f2cc02936d4e59e455f32dfb7c2fb01ba32021e07e2e5d7d70c89",
	"0023_page_absent.sql":                "cf80234eb2022ad0b77bddbf3862113204be80cd00450e6b56c164ebf9b5da89",
	"0024_page_removals.sql":              "844315426a0bfe0ae06589e6814a0783187bf7574d0c90c891ba7139fb44a860",
	"0025_pages_withdrawing.sql":          "d6633716514ecbc6197da2a37ec52d73433370521fad913f0cadfd9c75e16c88",
	"0026_outbox_attempt_until.sql":       "c1ba6b0574a8923052c0aaa7b45aecb67fe698b4ce73375bac4c545695dcdbf9",
	"0027_search_words.postgres.sql":      "f086797758556770b230525926f1528588eed29d2299bf372d6845fbee475180",
	"0028_outbox_match.sql":               "5bdd03c9cd462a241312c5da23495060feba2fc0854bafebc4dc6ec75d293c84",
	"0029_outbox_first_attempt.sql":       "190169679d2f3262bd91bef4ca129cbe26d642dcfe28da1929214568c6b2458d",
	"0030_summary_failures.sql":           "804435488122431469e091d06edb2a28b1129b9453dc320788f60f0a2f2b7f9d",
	"0031_outbox_key_scope.sql":           "4066137fc7f7b8f35e671cd98169542673b74959c9b4db770be2f0c185f35ccc",
	"0032_outbox_reconciled.sql":          "ea1ddbde867adcc878f4fd6526129bc7c4822160a668b8aee53ea7780883f533",
	"0033_summary_unreject.sql":           "99f74d50d4d07c0983c860fdf005987b34fe2714a332dc5ae0df40a84cee4566",
	"0034_outbox_read_progress.sql":       "b422a23708a5424c7bbdee4737c72990110722ffd5203ec76c8f181a0f376df6",
	"0035_source_key.sql":                 "178d84b129cadd7485c8ab50f05ab4775c3a30b9fce36e2d9220862121fe78a8",
	"0036_run_note.sql":                   "7e4e34d1aadc72deb071642c4aac10034ac51d8a6665f9efc97f0fc6a4363353",
	"0037_lane_failures_presence.sql":     "2160e0ed3220e6fdc7b0c3100068c3383ff467eb0e3258c4e780f7d2c0f5192f",
	"0038_lane_failed_steps.sql":          "27cd46c0f1f152c9b76ff1c53b5a3064b5885e8bc1426ee656ffd3a6a0c2192e",
	"0039_lane_failed_steps_from_run.sql": "caf7548180c7bb6be05262d83c18ebb32a7a45293439c72cb9376010c9c3ee1d",
}

func TestMigrationsArePinned(t *testing.T) {
	ms, err := sqlstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range ms {
		seen[m.File()] = true
		pin, ok := releasedMigrations[m.File()]
		switch {
		case !ok:
			t.Errorf("migrations/%s has no pinned hash; add %q: %q to releasedMigrations", m.File(), m.File(), m.SHA256)
		case pin != m.SHA256:
			t.Errorf("migrations/%s changed after release (sha256 %s, pinned %s): restore it and put the change in a new migration",
				m.File(), m.SHA256, pin)
		}
	}
	for f := range releasedMigrations {
		if !seen[f] {
			t.Errorf("released migration %s is gone from migrations/", f)
		}
	}
}

func mustExec(tb testing.TB, db *sqlstore.DB, q string, args ...any) {
	tb.Helper()
	if _, err := db.SQL().ExecContext(context.Background(), q, args...); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}

func recordedHashes(tb testing.TB, db *sqlstore.DB) map[int]string {
	tb.Helper()
	rows, err := db.SQL().QueryContext(context.Background(), `SELECT version, COALESCE(sha256, '') FROM schema_migrations`)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	got := map[int]string{}
	for rows.Next() {
		var v int
		var h string
		if err := rows.Scan(&v, &h); err != nil {
			tb.Fatal(err)
		}
		got[v] = h
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return got
}

// Every applied migration's checksum is recorded, and a database whose
// record disagrees with the file refuses to open, naming the file.
func TestMigrationChecksums(t *testing.T) {
	ms, err := sqlstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		url := b.NewURL(t)
		db := sqltest.MustOpenURL(t, url, sqltest.NewEnv(1))
		got := recordedHashes(t, db)
		for _, m := range ms {
			if m.Dialect != "" && m.Dialect != b.Name {
				continue
			}
			if got[m.Version] != m.SHA256 {
				t.Errorf("migration %s recorded sha256 %q, want %q", m.File(), got[m.Version], m.SHA256)
			}
		}
		mustExec(t, db, `UPDATE schema_migrations SET sha256 = $1 WHERE version = $2`, strings.Repeat("0", 64), ms[0].Version)
		db.Close()

		_, err := sqlstore.Open(context.Background(), url, sqlstore.Options{})
		if !errors.Is(err, sqlstore.ErrMigrationChanged) || !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("open over a changed migration: %v, want ErrMigrationChanged", err)
		}
		if !strings.Contains(err.Error(), ms[0].File()) {
			t.Errorf("error %q does not name the file %s", err, ms[0].File())
		}
	})
}

// A database whose migrations were applied before checksums were recorded
// gets its column and its checksums on the next open.
func TestMigrationChecksumsBackfilled(t *testing.T) {
	ms, err := sqlstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		url := b.NewURL(t)
		db := sqltest.MustOpenURL(t, url, sqltest.NewEnv(1))
		mustExec(t, db, `ALTER TABLE schema_migrations DROP COLUMN sha256`)
		db.Close()

		db = sqltest.MustOpenURL(t, url, sqltest.NewEnv(1))
		got := recordedHashes(t, db)
		for _, m := range ms {
			if m.Dialect != "" && m.Dialect != b.Name {
				continue
			}
			if pin := releasedMigrations[m.File()]; got[m.Version] != pin {
				t.Errorf("migration %s: backfilled sha256 %q, want %q", m.File(), got[m.Version], pin)
			}
		}
	})
}

// A database a newer tidemark migrated is refused, naming the migration
// this build does not know: an older build would run on a schema it does
// not understand (leaving new columns unfilled, republishing pages in its
// own format against the newer build's). A process already running
// learns it from CheckSchema.
func TestANewerDatabaseIsRefused(t *testing.T) {
	ms, err := sqlstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	next := ms[len(ms)-1].Version + 1
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		url := b.NewURL(t)
		db := sqltest.MustOpenURL(t, url, sqltest.NewEnv(1))
		if err := db.CheckSchema(context.Background()); err != nil {
			t.Fatalf("a database this build migrated: %v", err)
		}
		mustExec(t, db, `INSERT INTO schema_migrations (version, name, applied_at, sha256) VALUES ($1, 'from_the_future', 0, 'x')`, next)
		err := db.CheckSchema(context.Background())
		if !errors.Is(err, sqlstore.ErrNewerSchema) || !errors.Is(err, tidemark.ErrConflict) {
			t.Fatalf("CheckSchema over a newer database: %v, want ErrNewerSchema", err)
		}
		db.Close()
		_, err = sqlstore.Open(context.Background(), url, sqlstore.Options{})
		if !errors.Is(err, sqlstore.ErrNewerSchema) {
			t.Fatalf("open a newer database: %v, want ErrNewerSchema", err)
		}
		if want := fmt.Sprintf("%04d_from_the_future", next); !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name the migration %s", err, want)
		}
	})
}

// The migration lock serializes the processes that migrate one schema,
// not every tidemark on the server: a database in another schema opens
// while this one is held.
func TestMigrationLockIsPerSchema(t *testing.T) {
	if os.Getenv(sqltest.PostgresEnv) == "" {
		t.Skipf("%s not set: the lock is PostgreSQL's", sqltest.PostgresEnv)
	}
	ctx := context.Background()
	pg := sqltest.Backends()[1]
	url := pg.NewURL(t)
	held := sqltest.MustOpenURL(t, url, sqltest.NewEnv(1))
	tx, err := held.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, sqlstore.Postgres.MigrationLock); err != nil {
		t.Fatal(err)
	}

	other, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	db, err := sqlstore.Open(other, pg.NewURL(t), sqlstore.Options{})
	if err != nil {
		t.Fatalf("another schema waited for this one's migration lock: %v", err)
	}
	db.Close()

	// The same schema still waits.
	same, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if db, err := sqlstore.Open(same, url, sqlstore.Options{}); err == nil {
		db.Close()
		t.Fatal("a second process migrated the schema while its lock was held")
	}
}
