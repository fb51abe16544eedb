package aws

import (
	"context"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
)

// loopingProducts answers GetProducts with an empty page whose NextToken cycles
// through tokens.
type loopingProducts struct {
	tokens []string
	calls  int
}

func (f *loopingProducts) GetProducts(ctx context.Context, in *awspricing.GetProductsInput, _ ...func(*awspricing.Options)) (*awspricing.GetProductsOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tok := f.tokens[f.calls%len(f.tokens)]
	f.calls++
	return &awspricing.GetProductsOutput{FormatVersion: awssdk.String("aws_v1"), NextToken: awssdk.String(tok)}, nil
}

// TestNextTokenLoop: a GetProducts NextToken that alternates between two values (which
// the SDK's StopOnDuplicateToken does not catch) ends the region's listing with an
// error naming the loop after a few calls (issue 30: it ran until the timeout).
func TestNextTokenLoop(t *testing.T) {
	for _, tokens := range [][]string{{"a", "b"}, {"a", "b", "c"}} {
		f := &loopingProducts{tokens: tokens}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := getProducts(ctx, f, "us-east-1", pageSize, func(*priceItem) {}, nil)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "pagination loops") || !strings.Contains(err.Error(), "GetProducts us-east-1") {
			t.Errorf("tokens %v: %v; want the loop named", tokens, err)
		}
		if f.calls > len(tokens)+1 {
			t.Errorf("tokens %v: %d calls; want at most %d", tokens, f.calls, len(tokens)+1)
		}
	}
}
