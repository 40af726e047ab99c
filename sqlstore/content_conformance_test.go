package sqlstore_test

import (
	"testing"

	"github.com/tidemark/tidemark/content/contenttest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func TestContentConformance(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		contenttest.Run(t, func(t *testing.T) contenttest.Harness {
			env := sqltest.NewEnv(1)
			return contenttest.Harness{Store: sqltest.MustOpen(t, b, env).Content(), Clock: env.Clock}
		})
	})
}
