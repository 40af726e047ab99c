package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
)

// A store location or a database URL that opening would refuse is refused
// when the setting is read, naming where it came from and showing no
// secret: every command, config included, refuses it before anything runs.
func TestStoreWithCredentialsIsRefused(t *testing.T) {
	for name, v := range map[string]string{
		"TIDEMARK_STORE": "s3://AKIDX:SEKRET-s3url-140@tidemark-test/p",
		"TIDEMARK_DB":    "mysql://u:SEKRET-db-141@h/d",
	} {
		_, err := Load(env(map[string]string{name: v}))
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "invalid "+name) || strings.Contains(err.Error(), "SEKRET") || strings.Contains(err.Error(), "AKIDX") {
			t.Errorf("%s=%s: %v, want it refused naming %s without its credentials", name, v, err, name)
		}
	}
	for name, v := range map[string]string{"TIDEMARK_DB": "host=db user=tm password=SEKRET dbname=tm", "TIDEMARK_STORE": ""} {
		if _, err := Load(env(map[string]string{name: v})); err != nil {
			t.Errorf("%s=%q: %v, want it accepted", name, v, err)
		}
	}
	// An empty flag means the default, as an unset one does.
	var c Config
	if err := c.Set("db", "", "--db"); err != nil {
		t.Errorf("--db \"\": %v, want the default", err)
	}
}
