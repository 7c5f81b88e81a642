package terminus

import (
	"fmt"
	"strings"
)

// The prompts are gauntlet's own wording of what Terminal-Bench's
// Terminus-2 asks (docs/TERMINUS2.md compares them); the structure — the
// JSON answer format, the confirmation turn, the three-call handoff — is
// the published agent's.

// formatSpec explains the answer format; the first prompt and the handoff
// both carry it.
const formatSpec = `Answer every turn with a single JSON object and nothing else:

{
  "analysis": "What the terminal shows now and what it means for the task.",
  "plan": "What you will do next, and why.",
  "commands": [
    {"keystrokes": "ls -la\n", "duration": 0.5},
    {"keystrokes": "cat notes.txt\n", "duration": 0.5}
  ],
  "task_complete": false
}

- "analysis" and "plan" are strings and required.
- "commands" is required and may be empty. Each "keystrokes" string is typed into the terminal exactly as written: end a shell command with "\n" to run it. A string that is exactly a tmux key name is sent as that key: "C-c" (interrupt), "C-d", "C-z", "Enter", "Escape", "Tab", "BSpace", "Up", "Down", "Left", "Right", "M-b" and so on.
- "duration" is how many seconds to wait after typing before looking at the terminal again: 1 if left out, at most 60. The wait ends early once the shell is back at its prompt, so give long-running commands the time they need.
- "task_complete" (default false): set it to true once the task is fully done. You will be asked to confirm.

Commands run one after another. After each turn you see the new output only; text already shown is not repeated. Output longer than 10,000 bytes is cut to its first and last 5,000 bytes: send long output to a file and read it in parts when you need all of it. Avoid programs that wait for input you cannot give; prefer their non-interactive options.`

// initialPrompt is the first user message: the task and the screen.
func initialPrompt(instruction, screen string) string {
	return fmt.Sprintf(`You are an AI agent working in a Linux terminal to complete a task. You act only by typing keystrokes into an interactive bash session; each turn shows you what the terminal printed.

# Task

%s

# How to answer

%s

# The terminal now

%s
`, strings.TrimSpace(instruction), formatSpec, screenBlock(screen))
}

func screenBlock(screen string) string {
	if strings.TrimSpace(screen) == "" {
		return "(the screen is empty)"
	}
	return screen
}

// parseErrorPrompt answers a response that could not be used.
func parseErrorPrompt(fb Feedback) string {
	var b strings.Builder
	b.WriteString("Your last answer could not be used, and nothing was typed:\n")
	for _, e := range fb.Errors {
		b.WriteString("ERROR: " + e + "\n")
	}
	for _, w := range fb.Warnings {
		b.WriteString("WARNING: " + w + "\n")
	}
	b.WriteString("\nAnswer again with one JSON object in the format described at the start, with the fields analysis, plan, commands and task_complete.")
	return b.String()
}

// observationPrompt reports a turn's output, with the warnings first.
func observationPrompt(output string, fb Feedback) string {
	if len(fb.Warnings) == 0 {
		return output
	}
	var b strings.Builder
	b.WriteString("Your last answer was used, with these warnings:\n")
	for _, w := range fb.Warnings {
		b.WriteString("WARNING: " + w + "\n")
	}
	b.WriteString("\n")
	b.WriteString(output)
	return b.String()
}

// confirmPrompt asks the agent to confirm that the task is complete.
func confirmPrompt(output string) string {
	return fmt.Sprintf(`%s

You said the task is complete. Is it? Once confirmed, your work is graded as it stands and you cannot change anything afterwards. Check the terminal above against every requirement of the task. If you are sure, answer again with "task_complete": true; otherwise set it to false and keep working.`, output)
}

// Summarisation (the context is nearly full): three calls.

// summaryPrompt asks the current conversation for a handoff summary.
const summaryPrompt = `Your context is almost full, so another AI agent will take over this task from here. It will see only what you write now, not this conversation. Write a complete handoff covering:

1. What you did: the commands that mattered and what they changed.
2. What you found out: file locations, configurations, versions, errors and their causes.
3. Problems you solved and how, and any that remain open.
4. Where things stand: what is finished, what is left, and what you would do next.

Be specific and detailed. Answer in plain text, not JSON.`

// questionsPrompt is the fresh context's first message: the next agent
// reads the task, the summary and the screen, and asks what it needs.
func questionsPrompt(instruction, summary, screen string) string {
	return fmt.Sprintf(`You are taking over a task in a Linux terminal from another AI agent.

# Task

%s

# The previous agent's handoff

%s

# The terminal now

%s

Before you continue, ask the previous agent the questions whose answers you need to carry on: at least five, about anything the handoff leaves unclear. Answer with the numbered questions only, in plain text.`, strings.TrimSpace(instruction), summary, screenBlock(screen))
}

// answersPrompt asks the summarising conversation to answer the questions.
func answersPrompt(questions string) string {
	return "The agent taking over has these questions. Answer each one in detail, in plain text:\n\n" + questions
}

// resumePrompt continues the work in the fresh context after the handoff.
func resumePrompt(answers, observation string) string {
	return fmt.Sprintf(`The previous agent answered:

%s

You now carry on with the task on your own; you cannot ask more questions.

%s

%s`, answers, formatSpec, observation)
}
