package cmd

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"
)

// The JUnit XML layout CI systems read: one <testsuite> with one <testcase>
// per file and rule. A broken rule is a <failure>; a file that could not be
// read is an <error> on its "read" test case.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitFromReport builds the JUnit document of a check report.
func junitFromReport(rep *checkReport) junitSuites {
	s := junitSuite{Name: "roce-inspect check", Time: "0"}
	for i := range rep.Files {
		v := &rep.Files[i]
		read := junitCase{Name: "read", Classname: v.File, Time: "0",
			SystemOut: fmt.Sprintf("%d frames, %d RoCE packets", v.Frames, v.RoCE)}
		if v.Error != "" {
			read.Error = &junitProblem{Message: v.Error, Type: "unreadable", Text: v.Error}
			s.Errors++
		}
		s.Cases = append(s.Cases, read)
		for _, r := range v.Rules {
			c := junitCase{Name: r.Name, Classname: v.File, Time: "0"}
			limit := "no limit"
			if r.Limit >= 0 {
				limit = fmt.Sprintf("max %d", r.Limit)
			}
			c.SystemOut = fmt.Sprintf("%s: %d (%s)", r.Name, r.Value, limit)
			if !r.Passed {
				msg := fmt.Sprintf("%s: %d exceeds %s", r.Name, r.Value, limit)
				if r.Note != "" {
					msg += ": " + r.Note
				}
				c.Failure = &junitProblem{Message: msg, Type: "rule", Text: offendersText(v, r.Name)}
				s.Failures++
			}
			s.Cases = append(s.Cases, c)
		}
	}
	s.Tests = len(s.Cases)
	return junitSuites{Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Suites: []junitSuite{s}}
}

// offendersText lists the offending packets that belong to a rule.
func offendersText(v *fileVerdict, ruleName string) string {
	var b strings.Builder
	for _, o := range v.Offenders {
		if (ruleName == "bad-icrc" && o.Problem == "bad ICRC") || (ruleName == "malformed" && strings.HasPrefix(o.Problem, "malformed")) {
			fmt.Fprintf(&b, "frame %d: %s, %s PSN %d, %s", o.Frame, o.Flow, o.Opcode, o.PSN, o.Problem)
			if o.ICRCFound != "" {
				fmt.Fprintf(&b, " (found %s, expected %s)", o.ICRCFound, o.ICRCExpected)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// writeJUnitFile writes the JUnit XML of a check report to path.
func writeJUnitFile(path string, rep *checkReport) error {
	doc := junitFromReport(rep)
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	data := append([]byte(xml.Header), out...)
	data = append(data, '\n')
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	return nil
}
