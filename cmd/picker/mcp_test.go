package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// mcpTestApp is an app as Run sets one up (no config file, the pinned clock) over db.
func mcpTestApp(t *testing.T, db string) *app {
	t.Helper()
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir(), "XDG_CACHE_HOME": t.TempDir()}
	m := Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return fixedNow }}
	a := &app{m: m, stdout: io.Discard, errOut: &termOut{w: io.Discard}, now: m.Now, dbPath: db, output: "table", logFormat: "text"}
	a.stderr = a.errOut
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if a.st != nil {
			a.st.Close()
		}
	})
	return a
}

// mcpSession connects the SDK's client to a's MCP server in process.
func mcpSession(t *testing.T, a *app) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := a.mcpServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// callTool calls a tool and returns its result, failing on a protocol error.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v; want a tool result", name, err)
	}
	return res
}

func texts(t *testing.T, res *mcp.CallToolResult) []string {
	t.Helper()
	var out []string
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			t.Fatalf("content %T; want text", c)
		}
		out = append(out, tc.Text)
	}
	return out
}

func TestMCPToolsSchemasAreTheFlags(t *testing.T) {
	a := mcpTestApp(t, tempDB(t))
	cs := mcpSession(t, a)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"estimate", "history", "offers", "providers", "recommend"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v; want %v", names, want)
	}
	cmds := map[string]*cobra.Command{}
	for _, c := range a.rootCmd().Commands() {
		cmds[c.Name()] = c
	}
	for _, tool := range lt.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(b, &schema); err != nil || schema.Type != "object" {
			t.Fatalf("%s: input schema %s: want an object (%v)", tool.Name, b, err)
		}
		var props []string
		for p := range schema.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		var flags []string
		cmds[tool.Name].Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" {
				flags = append(flags, f.Name)
			}
		})
		slices.Sort(flags)
		if !slices.Equal(props, flags) {
			t.Errorf("%s: schema properties %v; want the flags %v", tool.Name, props, flags)
		}
	}
	// Types as JSON gives them.
	for _, tool := range lt.Tools {
		if tool.Name != "recommend" {
			continue
		}
		b, _ := json.Marshal(tool.InputSchema)
		for _, want := range []string{`"top":{"description":"how many offers to show (default 10)","type":"integer"}`, `"grad-ckpt":{`, `"type":"boolean"`, `"type":["string","array"]`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("recommend schema lacks %s:\n%s", want, b)
			}
		}
	}
}

// A tool's first text is the command's -o json, byte for byte, for the same flags given
// as JSON arguments (numbers, bools and arrays converted to the flags' text).
func TestMCPToolsAnswerTheCLIJSON(t *testing.T) {
	db := tempDB(t)
	cs := mcpSession(t, mcpTestApp(t, db))
	for _, tc := range []struct {
		tool string
		args map[string]any
		cli  []string
	}{
		{"recommend", map[string]any{"model": "llama-2-7b", "task": "lora", "batch": 4, "seq-len": 2048, "top": 3, "grad-ckpt": true},
			[]string{"recommend", "--model", "llama-2-7b", "--task", "lora", "--batch", "4", "--seq-len", "2048", "--top", "3", "--grad-ckpt"}},
		{"offers", map[string]any{"gpu-model": []string{"H100", "A100-80GB"}, "provider": "lambda", "limit": 2},
			[]string{"offers", "--gpu-model", "H100,A100-80GB", "--provider", "lambda", "--limit", "2"}},
		{"estimate", map[string]any{"model": "llama-2-7b", "task": "qlora", "batch": "2"},
			[]string{"estimate", "--model", "llama-2-7b", "--task", "qlora", "--batch", "2"}},
		{"history", map[string]any{"gpu-model": "H100", "purchase": "on-demand"},
			[]string{"history", "--gpu-model", "H100", "--purchase", "on-demand"}},
		{"providers", nil, []string{"providers"}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			want := runCLI(t, db, false, append(tc.cli, "-o", "json")...)
			if want.code != 0 {
				t.Fatalf("CLI exit %d: %s", want.code, want.stderr)
			}
			res := callTool(t, cs, tc.tool, tc.args)
			got := texts(t, res)
			if res.IsError {
				t.Fatalf("tool error: %v", got)
			}
			if len(got) != 2 || got[0] != want.stdout {
				t.Fatalf("tool answer:\n%.600s\nwant the CLI's JSON:\n%.600s", strings.Join(got, "\n--\n"), want.stdout)
			}
			if !strings.HasPrefix(got[1], "price age: ") {
				t.Errorf("second text %q; want the price age", got[1])
			}
			if tc.tool != "estimate" && !strings.Contains(got[1], "observed 2026-") {
				t.Errorf("second text %q; want when the prices were observed", got[1])
			}
			var sc struct {
				Result   json.RawMessage `json:"result"`
				PriceAge priceAge        `json:"price_age"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &sc); err != nil || len(sc.Result) == 0 {
				t.Fatalf("structured content %s: want result and price_age (%v)", b, err)
			}
			if tc.tool != "estimate" && (sc.PriceAge.NewestObservedAt == nil || sc.PriceAge.Newest == "") {
				t.Errorf("structured price_age %+v; want the newest price's age", sc.PriceAge)
			}
		})
	}
}

// Bad input is a tool error (isError) naming the parameter, never a protocol error.
func TestMCPBadArgumentIsAToolErrorNamingIt(t *testing.T) {
	cs := mcpSession(t, mcpTestApp(t, tempDB(t)))
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		param string
	}{
		{"recommend", map[string]any{"model": "llama-2-7b", "top": "many"}, "top"},
		{"recommend", map[string]any{"model": "llama-2-7b", "top": 0}, "top"},
		{"recommend", map[string]any{"model": "llama-2-7b", "task": "sing"}, "task"},
		{"estimate", map[string]any{"model": "llama-2-7b", "bogus": 1}, "bogus"},
		{"offers", map[string]any{"max-price": "cheap"}, "max-price"},
		{"offers", map[string]any{"limit": map[string]any{"n": 1}}, "limit"},
		{"history", map[string]any{"provider": "aws,gcp", "instance-type": "x"}, "provider"},
		{"providers", map[string]any{"verbose": true}, "verbose"},
	} {
		res := callTool(t, cs, tc.tool, tc.args)
		got := strings.Join(texts(t, res), "\n")
		if !res.IsError || !strings.Contains(got, tc.param) {
			t.Errorf("%s %v: isError %v, %q; want a tool error naming %q", tc.tool, tc.args, res.IsError, got, tc.param)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if !strings.Contains(string(b), `"param":"`+tc.param+`"`) {
			t.Errorf("%s %v: structured %s; want param %q", tc.tool, tc.args, b, tc.param)
		}
	}
}

// `picker mcp` speaks the protocol on stdin and stdout, and ends when stdin does.
func TestMCPCommandServesStdio(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb strings.Builder
	tty := false
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir(), "XDG_CACHE_HOME": t.TempDir()}
	m := Main{Stdin: inR, Stdout: outW, Stderr: &errb, Args: []string{"--db", tempDB(t), "mcp"}, TTY: &tty,
		Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return fixedNow }}
	done := make(chan int)
	go func() { done <- m.Run(context.Background()); outW.Close() }()
	go func() {
		for _, l := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"offers","arguments":{"gpu-model":"H100","limit":1}}}`,
		} {
			io.WriteString(inW, l+"\n")
		}
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	var answer string
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"id":2`) {
			answer = sc.Text()
			break
		}
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if code := <-done; code != 0 {
		t.Errorf("picker mcp exit %d: %s", code, errb.String())
	}
	if !strings.Contains(answer, `\"gpu_model\": \"H100\"`) || !strings.Contains(answer, "price age: ") {
		t.Fatalf("answer %s\nstderr %s\nwant the offers call's JSON and price age", answer, errb.String())
	}
}
