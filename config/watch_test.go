package config

import (
	"strings"
	"testing"

	"github.com/pickergpu/picker/pricing"
)

func TestWatchEntriesParse(t *testing.T) {
	b := []byte(`[[watch]]
name = "h100"
job = "--model llama-2-7b --task lora"
max_usd_hr = 2

[[watch]]
name = "job"
job = "--model llama-2-7b --task lora --tokens 1e9"
max_usd_job = 12.5
webhook_url = "https://user:pw@hooks.example/x"
`)
	c, err := Parse(b, "w.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Watches) != 2 {
		t.Fatalf("watches %+v", c.Watches)
	}
	if k, v := c.Watches[0].Threshold(); k != "max_usd_hr" || v != 2 {
		t.Errorf("first threshold %s %v", k, v)
	}
	if k, v := c.Watches[1].Threshold(); k != "max_usd_job" || v != 12.5 {
		t.Errorf("second threshold %s %v", k, v)
	}
	if got := c.Where("watch", "1", "job"); got != "w.toml:8:1" {
		t.Errorf("Where second job = %q", got)
	}
	if err := c.WatchError(1, "job", ": bad"); !strings.HasPrefix(err.Error(), `config: w.toml:8:1: [[watch]] "job" job: bad`) {
		t.Errorf("WatchError = %v", err)
	}
}

func TestWatchErrorsNameKeyAndLine(t *testing.T) {
	head := "[[watch]]\nname = \"a\"\njob = \"--model x\"\nmax_usd_hr = 1\n\n"
	cases := []struct{ file, want string }{
		{head + "[[watch]]\njob = \"--model x\"\nmax_usd_hr = 1\n", `w.toml:6:3: [[watch]] #2 name is required`},
		{head + "[[watch]]\nname = \"a\"\njob = \"--model x\"\nmax_usd_hr = 1\n", `w.toml:7:1: [[watch]] "a" name: another`},
		{head + "[[watch]]\nname = \"b\"\nmax_usd_hr = 1\n", `w.toml:6:3: [[watch]] "b" job is required`},
		{head + "[[watch]]\nname = \"b\"\njob = \"--model x\"\n", `w.toml:6:3: [[watch]] "b" max_usd_hr: a threshold is required`},
		{head + "[[watch]]\nname = \"b\"\njob = \"--model x\"\nmax_usd_hr = 1\nmax_usd_job = 2\n", `w.toml:10:1: [[watch]] "b" max_usd_job: give one threshold`},
		{head + "[[watch]]\nname = \"b\"\njob = \"--model x\"\nmax_usd_per_unit = -1\n", `w.toml:9:1: [[watch]] "b" max_usd_per_unit -1: want a positive`},
		{head + "[[watch]]\nname = \"b\"\njob = \"--model x\"\nmax_usd_hr = 1\nwebhook_url = \"ftp://secret@x\"\n", `w.toml:10:1: [[watch]] "b" webhook_url: want an absolute http`},
		{head + "[[watch]]\nname = \"b\"\njobs = \"--model x\"\n", `w.toml:8`},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.file), "w.toml")
		if err == nil || !strings.Contains(err.Error(), tc.want) || pricing.ErrorCode(err) != pricing.Invalid {
			t.Errorf("%q:\n got %v\nwant %q", tc.file, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error echoes the webhook URL: %v", err)
		}
	}
}
