package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/pipeline"
)

// An operator's lane: added, changed, and removed only once nothing waiting
// on it would be lost (or when forced). Each change is audited with its
// actor.
func ExamplePipeline_RemoveLane() {
	ctx := context.Background()
	home, _ := os.MkdirTemp("", "tidemark-example-")
	defer os.RemoveAll(home)
	cfg := pipeline.Defaults()
	cfg.Home = home
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	lane, err := p.AddLane(ctx, "hooks", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "https://example.org/hook/t0ken", "secret": "s3cret"}}, "ada")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lane.Name, lane.Guarantee.Guarantee, lane.Health, lane.Settings["url"], lane.Settings["secret"])
	list := "https://example.org/writes"
	set, err := p.SetLane(ctx, "hooks", outbox.LaneChange{Settings: map[string]string{"list_url": list}}, "ada")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(set.Guarantee.Guarantee)
	if _, err := p.Draft(ctx, outbox.Draft{Lane: "hooks", Target: "room", Body: "hello"}); err != nil {
		log.Fatal(err)
	}
	_, err = p.RemoveLane(ctx, "hooks", false, "bob")
	fmt.Println(errors.Is(err, tidemark.ErrConflict))
	removed, err := p.RemoveLane(ctx, "hooks", true, "bob")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("forced, lost:", removed.Loss())
	history, _ := p.LaneActions(ctx, "hooks")
	for _, a := range history {
		fmt.Println(a.Action, "by", a.Actor)
	}
	// Output:
	// hooks at-most-once ok https://example.org/••• •••
	// exactly-once
	// true
	// forced, lost: 1 pending
	// lane remove by bob
	// lane set by ada
	// lane add by ada
}
