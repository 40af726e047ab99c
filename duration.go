package tidemark

import "time"

// Duration is a time.Duration that reads and writes as text ("15m0s"), so
// a JSON field holds one value a person can read, not a count of
// nanoseconds beside a copy of it in words.
type Duration time.Duration

// MarshalText writes d as time.Duration's String.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads what time.ParseDuration accepts.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }
