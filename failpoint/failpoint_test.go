package failpoint

import (
	"context"
	"errors"
	"strings"
	"testing"
)

var testPoint = Register("failpoint.test", "the test's two halves")

func TestArmErrorNth(t *testing.T) {
	t.Cleanup(Reset)
	if err := Arm("failpoint.test=error@2"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := testPoint.Hit(ctx); err != nil {
		t.Fatalf("first hit fired: %v", err)
	}
	var fe *Error
	if err := testPoint.Hit(ctx); !errors.As(err, &fe) || fe.Name != "failpoint.test" {
		t.Fatalf("second hit: got %v, want injected error", err)
	}
	if err := testPoint.Hit(ctx); err != nil {
		t.Fatalf("third hit fired: %v", err)
	}
}

func TestArmRejectsUnknown(t *testing.T) {
	t.Cleanup(Reset)
	for _, spec := range []string{
		"no.such.point=error",
		"failpoint.test=explode",
		"failpoint.test",
		"failpoint.test=delay(x)",
		"failpoint.test=error@0",
	} {
		if err := Arm(spec); err == nil {
			t.Errorf("Arm(%q) accepted", spec)
		}
	}
	if testPoint.Armed() != "" {
		t.Fatal("a rejected spec armed a point")
	}
}

func TestDelayHonoursContext(t *testing.T) {
	t.Cleanup(Reset)
	if err := Arm("failpoint.test=delay(600000)"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := testPoint.Hit(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestInertWhenUnarmed(t *testing.T) {
	Reset()
	if err := testPoint.Hit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotText(t *testing.T) {
	t.Cleanup(Reset)
	if err := Arm("failpoint.test=error@2"); err != nil {
		t.Fatal(err)
	}
	var got *State
	for _, s := range Snapshot() {
		if s.Name == "failpoint.test" {
			got = &s
		}
	}
	if got == nil || got.Separates != "the test's two halves" || got.Armed != "error@2" {
		t.Fatalf("snapshot of the armed point: %+v", got)
	}
	var b strings.Builder
	if err := (States{*got, {Name: "b.point", Separates: "x"}}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "NAME            SEPARATES              ARMED\nfailpoint.test  the test's two halves  error@2\nb.point         x                      \n"
	if b.String() != want {
		t.Errorf("got:\n%q\nwant:\n%q", b.String(), want)
	}
}
