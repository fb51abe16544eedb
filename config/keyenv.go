package config

import (
	"reflect"
	"strings"
)

// KeyEnv returns what the provider's section sets api_key_env to ("" when it sets
// nothing, or the adapter has no such key), so `picker providers` can name the
// variable a refresh will read rather than the adapter's default.
func (c *Config) KeyEnv(provider string) string {
	v := reflect.ValueOf(c.Providers[provider])
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	for i := range v.NumField() {
		tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ",")
		if tag == "api_key_env" && v.Field(i).Kind() == reflect.String {
			return strings.TrimSpace(v.Field(i).String())
		}
	}
	return ""
}
