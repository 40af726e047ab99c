package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tidemark/tidemark"
)

// outageConnector opens connections through Connector, and reports a
// connection it cannot open as the outage it is (tidemark.ErrUnavailable:
// exit 5, HTTP 503), not as an internal error: the server is down, cannot
// be reached, or refuses connections for now. Every query of a pool whose
// connections went with their server connects anew (database/sql retries a
// connection the driver found dead on a fresh one), so a query or a
// token's check made while the server is away says so. A query cut off in
// flight reports the driver's own error; the next one connects.
//
// Only the server's databases (PostgreSQL) take it: a SQLite file that
// cannot be opened is not an outage to wait out.
type outageConnector struct {
	driver.Connector
}

func (c outageConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	var pe *pgconn.PgError
	if err != nil && errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28") {
		// invalid_authorization_specification (28000), invalid_password
		// (28P01): the server answered, and refused our credentials. No
		// wait changes that: configuration to fix, as an object store that
		// refuses its keys is.
		return nil, fmt.Errorf("sqlstore: connect: %v: check the user and password of --db (TIDEMARK_DB): %w", err, tidemark.ErrRefused)
	}
	if err != nil && ctx.Err() == nil {
		// The driver's error as text, the kind last: it reads as one
		// message ("…: connection refused: unavailable"), and nothing
		// asks a connection's error for more than its kind.
		return nil, fmt.Errorf("sqlstore: connect: %v: %w", err, tidemark.ErrUnavailable)
	}
	return conn, err
}
