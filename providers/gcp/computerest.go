package gcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The two Compute Engine lists are read with plain REST+JSON rather than
// cloud.google.com/go/compute/apiv1: that library's computepb package registers
// Compute Engine's whole protobuf schema at program start (package init: 5-12 ms and
// 2.4 MB allocated in every picker process, `recommend` included, measured with
// GODEBUG=inittrace=1), for the two calls and six fields used here. The wire format is
// the same JSON the library reads (https://cloud.google.com/compute/docs/reference/rest/v1/machineTypes/aggregatedList).

// computeEndpoint is Compute Engine's REST root (the library's default).
const computeEndpoint = "https://compute.googleapis.com"

// aggregatedPage is one page of an aggregated list: items keyed by scope ("zones/X").
type aggregatedPage[T any] struct {
	Items         map[string]T `json:"items"`
	NextPageToken string       `json:"nextPageToken"`
}

type machineTypesScope struct {
	MachineTypes []struct {
		Name         string `json:"name"`
		Zone         string `json:"zone"`
		GuestCpus    int32  `json:"guestCpus"`
		MemoryMb     int32  `json:"memoryMb"`
		Accelerators []struct {
			GuestAcceleratorType  string `json:"guestAcceleratorType"`
			GuestAcceleratorCount int32  `json:"guestAcceleratorCount"`
		} `json:"accelerators"`
		Deprecated *struct {
			State string `json:"state"`
		} `json:"deprecated"`
	} `json:"machineTypes"`
}

type acceleratorTypesScope struct {
	AcceleratorTypes []struct {
		Name                    string `json:"name"`
		Zone                    string `json:"zone"`
		MaximumCardsPerInstance int32  `json:"maximumCardsPerInstance"`
	} `json:"acceleratorTypes"`
}

// aggregatedList reads every page of the aggregated list at path (under the project),
// calling each with one page's items. Each page is bounded by listTimeout; retries are
// the transport's (httpx.Transport).
func aggregatedList[T any](ctx context.Context, p *Provider, hc *http.Client, list string, q url.Values, each func(scope string, items T)) error {
	base := computeEndpoint
	if p.cfg.Endpoint != "" {
		base = strings.TrimSuffix(p.cfg.Endpoint, "/")
	}
	u := base + "/compute/v1/projects/" + url.PathEscape(p.cfg.Project) + "/aggregated/" + list
	for {
		var page aggregatedPage[T]
		if err := getJSON(ctx, hc, u+"?"+q.Encode(), &page); err != nil {
			return err
		}
		for _, scope := range slices.Sorted(maps.Keys(page.Items)) { // a stable order
			each(scope, page.Items[scope])
		}
		if page.NextPageToken == "" {
			return nil
		}
		q.Set("pageToken", page.NextPageToken)
	}
}

// pageTimeout bounds one page of a list call, as listTimeout does for the billing library.
const pageTimeout = 5 * time.Minute

// getJSON GETs u and decodes a 2xx JSON body into v; another status is an error carrying
// Google's error message.
func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Message string `json:"message"`
				Status  string `json:"status"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("HTTP %d %s: %s", resp.StatusCode, e.Error.Status, e.Error.Message)
		}
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decode %s: %w", req.URL.Path, err)
	}
	return nil
}
