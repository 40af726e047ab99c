package git_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/git"
	"github.com/tidemark/tidemark/fetch/httpx"
)

// git and what it runs (ssh, credential helpers, a ProxyCommand) see only
// the variables git needs: not tidemark's database URL, an S3 secret, or a
// variable a lane reads its token from; HOME, PATH, the SSH agent, git's
// own config and CA variables reach it.
func TestGitSeesOnlyTheEnvironmentItNeeds(t *testing.T) {
	bin := t.TempDir()
	record := filepath.Join(bin, "env")
	script := "#!/bin/sh\nenv > '" + record + "'\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"TIDEMARK_DB": "postgres://u:SEKRET-db-181@h/db", "AWS_SECRET_ACCESS_KEY": "SEKRET-aws-182",
		"HOOK_TOKEN": "SEKRET-lane-183", "TIDEMARK_OPENAI_API_KEY": "SEKRET-oai-184", "http_proxy": "http://SEKRET-proxy-185",
		"SSH_AUTH_SOCK": "/run/agent.sock", "GIT_CONFIG_GLOBAL": "/etc/tm-gitconfig", "GIT_SSL_CAINFO": "/etc/ca.pem",
		"LC_CTYPE": "C.UTF-8", "XDG_CONFIG_HOME": "/cfg",
	} {
		t.Setenv(k, v)
	}
	f := &git.Fetcher{Git: filepath.Join(bin, "git"), CacheDir: t.TempDir(), Guard: httpx.New(httpx.Options{})}
	_, _ = f.Fetch(context.Background(), tidemark.Source{Name: "r", Kind: "git", Location: t.TempDir()}, "")
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("git did not run: %v", err)
	}
	env := string(b)
	if strings.Contains(env, "SEKRET") {
		t.Errorf("git saw a secret:\n%s", env)
	}
	for _, want := range []string{"PATH=", "HOME=", "SSH_AUTH_SOCK=/run/agent.sock", "GIT_CONFIG_GLOBAL=/etc/tm-gitconfig",
		"GIT_SSL_CAINFO=/etc/ca.pem", "XDG_CONFIG_HOME=/cfg", "GIT_TERMINAL_PROMPT=0"} {
		if !strings.Contains(env, want) {
			t.Errorf("git did not see %s:\n%s", want, env)
		}
	}
}
