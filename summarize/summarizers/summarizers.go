// Package summarizers builds a summarizer by name: the one place that
// knows every summarizer.
package summarizers

import (
	"os"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/summarize"
	"github.com/tidemark/tidemark/summarize/extractive"
	"github.com/tidemark/tidemark/summarize/openai"
)

// Names lists the summarizers.
var Names = []string{"extractive", "openai"}

// Default is the summarizer used unless one is named.
const Default = "extractive"

// OpenAI configures the openai summarizer (any chat-completions endpoint).
type OpenAI struct {
	BaseURL       string // default https://api.openai.com/v1
	APIKey        string
	Model         string
	PromptVersion string
	// PromptFile, when set, holds the prompt (PromptVersion names it).
	PromptFile string
}

// Open builds the summarizer called name ("" is Default). flag names the
// setting name came from, for the error that refuses it.
func Open(flag, name string, oa OpenAI) (summarize.Summarizer, error) {
	switch name {
	case "", "extractive":
		return extractive.Summarizer{}, nil
	case "openai":
		cfg := openai.Config{BaseURL: oa.BaseURL, APIKey: oa.APIKey, Model: oa.Model, PromptVersion: oa.PromptVersion}
		if cfg.BaseURL == "" {
			cfg.BaseURL = "https://api.openai.com/v1"
		}
		if oa.PromptFile != "" {
			b, err := os.ReadFile(oa.PromptFile)
			if err != nil {
				return nil, tidemark.Invalidf("TIDEMARK_OPENAI_PROMPT_FILE", oa.PromptFile, "%v", err)
			}
			cfg.Prompt = string(b)
		}
		return openai.New(cfg)
	default:
		return nil, tidemark.Invalidf(flag, name, "want %s", strings.Join(Names, " or "))
	}
}
