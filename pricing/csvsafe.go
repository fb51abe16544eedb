package pricing

import "strings"

// SpreadsheetSafe returns a text field for a CSV that a spreadsheet will open: a value
// that starts with =, +, -, @, a tab or a carriage return is read by Excel, LibreOffice
// and Google Sheets as a formula (=HYPERLINK(…) from a provider's instance type becomes
// a live link or a DDE call), so it is prefixed with a single quote, which the
// spreadsheets show as text (OWASP, "CSV Injection"). Only text columns pass through it;
// numbers are written by FormatNum.
func SpreadsheetSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
