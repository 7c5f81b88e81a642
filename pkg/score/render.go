package score

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/gauntlet-bench/gauntlet/pkg/boardview"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
)

// WriteText renders the board as the CLI's one leaderboard table
// (boardview.WriteText), the same table `gauntlet leaderboard` prints.
func WriteText(w io.Writer, b leaderboard.Board) error {
	return boardview.WriteText(w, boardview.FromBoard("", b))
}

// WriteJSON writes the whole board, every number included, as indented JSON.
func WriteJSON(w io.Writer, b leaderboard.Board) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
