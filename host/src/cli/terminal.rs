//! Questions on a real terminal (crossterm): a selector drawn on stderr,
//! driven by the arrow keys, Space (multi-select), Enter and Esc.

use crate::present::inert;
use crate::{Answer, Approval, ApprovalRequest, Question, Ui};
use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::style::Stylize;
use crossterm::{cursor, execute, terminal};
use std::io::Write;
use std::sync::Mutex;

/// A [`Ui`] on the terminal the host runs in.
#[derive(Debug, Default)]
pub struct TerminalUi {
    // One question at a time, even when calls of a round run concurrently.
    lock: Mutex<()>,
}

impl TerminalUi {
    /// A terminal UI; the caller has checked that stdin and stderr are terminals.
    pub fn new() -> TerminalUi {
        TerminalUi::default()
    }
}

/// Restores the terminal however the selector ends.
struct RawMode;

impl RawMode {
    fn enter() -> std::io::Result<RawMode> {
        terminal::enable_raw_mode()?;
        let _ = execute!(std::io::stderr(), cursor::Hide);
        Ok(RawMode)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = execute!(std::io::stderr(), cursor::Show);
        let _ = terminal::disable_raw_mode();
    }
}

/// Lets the user pick among `options`: one (Enter) or several (Space, then
/// Enter) when `multiple`. `None` on Esc or Ctrl+C.
fn select(options: &[String], multiple: bool) -> Option<Vec<usize>> {
    let mut err = std::io::stderr();
    let _raw = RawMode::enter().ok()?;
    let mut at = 0usize;
    let mut picked = vec![false; options.len()];
    let mut drawn = false;
    loop {
        if drawn {
            let _ = execute!(err, cursor::MoveUp(options.len() as u16));
        }
        for (i, option) in options.iter().enumerate() {
            let mark = if multiple {
                if picked[i] { "[x] " } else { "[ ] " }
            } else {
                ""
            };
            let line = format!("{mark}{}", inert(option));
            let line = if i == at {
                format!("> {}", line.cyan().bold())
            } else {
                format!("  {line}")
            };
            let _ = write!(err, "\r{}{line}\r\n", terminal::Clear(terminal::ClearType::CurrentLine));
        }
        let _ = err.flush();
        drawn = true;
        let Ok(Event::Key(key)) = event::read() else { continue };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => at = at.checked_sub(1).unwrap_or(options.len() - 1),
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => at = (at + 1) % options.len(),
            KeyCode::Char(' ') if multiple => picked[at] = !picked[at],
            KeyCode::Char(c) if !multiple && c.is_ascii_digit() => {
                let n = c.to_digit(10).unwrap_or(0) as usize;
                if (1..=options.len()).contains(&n) {
                    return Some(vec![n - 1]);
                }
            }
            KeyCode::Enter => {
                let chosen: Vec<usize> = (0..options.len()).filter(|&i| picked[i]).collect();
                return Some(if multiple && !chosen.is_empty() {
                    chosen
                } else {
                    vec![at]
                });
            }
            KeyCode::Esc => return None,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return None,
            _ => {}
        }
    }
}

/// The tabbed `choose` surface: one tab per question; Tab (or ←/→) switches
/// questions, ↑/↓ move, Space picks (toggles in multi-select), typing on
/// "Other…" writes a free-text answer, Enter commits every question, Esc
/// declines the whole thing.
struct Surface<'a> {
    questions: &'a [Question],
    tab: usize,
    cursor: Vec<usize>,
    picked: Vec<Vec<bool>>,
    custom: Vec<String>,
    drawn: u16,
}

impl<'a> Surface<'a> {
    fn new(questions: &'a [Question]) -> Surface<'a> {
        Surface {
            questions,
            tab: 0,
            cursor: vec![0; questions.len()],
            picked: questions.iter().map(|q| vec![false; q.choices.len()]).collect(),
            custom: vec![String::new(); questions.len()],
            drawn: 0,
        }
    }

    /// Rows of the current question: its choices, then "Other…" when offered.
    fn rows(&self) -> usize {
        let q = &self.questions[self.tab];
        q.choices.len() + usize::from(q.allow_custom)
    }

    fn on_other(&self) -> bool {
        let q = &self.questions[self.tab];
        q.allow_custom && self.cursor[self.tab] == q.choices.len()
    }

    fn draw(&mut self) {
        let mut err = std::io::stderr();
        if self.drawn > 0 {
            let _ = execute!(err, cursor::MoveUp(self.drawn));
        }
        let _ = execute!(
            err,
            cursor::MoveToColumn(0),
            terminal::Clear(terminal::ClearType::FromCursorDown)
        );
        let mut lines: Vec<String> = Vec::new();
        let tabs: Vec<String> = self
            .questions
            .iter()
            .enumerate()
            .map(|(i, q)| {
                // Brackets mark the current tab even where colour is off.
                if i == self.tab {
                    format!("{}", format!("[{}]", inert(&q.header)).reverse().bold())
                } else {
                    format!("{}", format!(" {} ", inert(&q.header)).dim())
                }
            })
            .collect();
        lines.push(tabs.join(" "));
        let q = &self.questions[self.tab];
        lines.push(inert(&q.question).into_owned().bold().to_string());
        for (i, choice) in q.choices.iter().enumerate() {
            let mark = match (q.multiple, self.picked[self.tab][i]) {
                (true, true) => "[x]",
                (true, false) => "[ ]",
                (false, true) => "(•)",
                (false, false) => "( )",
            };
            let text = match &choice.description {
                Some(d) => format!("{mark} {} — {}", inert(&choice.label), inert(d).into_owned().dim()),
                None => format!("{mark} {}", inert(&choice.label)),
            };
            lines.push(if self.cursor[self.tab] == i {
                format!("> {}", text.cyan())
            } else {
                format!("  {text}")
            });
        }
        if q.allow_custom {
            let text = format!("Other… {}", inert(&self.custom[self.tab]));
            lines.push(if self.on_other() {
                format!("> {}", text.cyan())
            } else {
                format!("  {text}")
            });
        }
        lines.push(
            "Tab switch question · ↑↓ move · Space pick · type for Other… · Enter submit all · Esc decline"
                .dim()
                .to_string(),
        );
        for line in &lines {
            let _ = write!(err, "{line}\r\n");
        }
        let _ = err.flush();
        self.drawn = lines.len() as u16;
    }

    fn answers(&self) -> Vec<Answer> {
        self.questions
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let mut selected: Vec<String> = q
                    .choices
                    .iter()
                    .zip(&self.picked[i])
                    .filter(|(_, p)| **p)
                    .map(|(c, _)| c.label.clone())
                    .collect();
                let custom = Some(self.custom[i].trim().to_string()).filter(|c| !c.is_empty());
                // A single-select question left unpicked answers with the highlighted choice.
                if !q.multiple
                    && selected.is_empty()
                    && custom.is_none()
                    && let Some(choice) = q.choices.get(self.cursor[i])
                {
                    selected.push(choice.label.clone());
                }
                Answer { selected, custom }
            })
            .collect()
    }

    fn run(mut self) -> Option<Vec<Answer>> {
        loop {
            self.draw();
            let Ok(Event::Key(key)) = event::read() else { continue };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            let rows = self.rows();
            let tab = self.tab;
            match key.code {
                KeyCode::Esc => return None,
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return None,
                KeyCode::Enter => return Some(self.answers()),
                KeyCode::Tab | KeyCode::Right => self.tab = (tab + 1) % self.questions.len(),
                KeyCode::BackTab | KeyCode::Left => self.tab = (tab + self.questions.len() - 1) % self.questions.len(),
                KeyCode::Up => self.cursor[tab] = (self.cursor[tab] + rows - 1) % rows,
                KeyCode::Down => self.cursor[tab] = (self.cursor[tab] + 1) % rows,
                KeyCode::Backspace if self.on_other() => {
                    self.custom[tab].pop();
                }
                KeyCode::Char(c) if self.on_other() => self.custom[tab].push(c),
                KeyCode::Char(' ') => {
                    let at = self.cursor[tab];
                    if self.questions[tab].multiple {
                        self.picked[tab][at] = !self.picked[tab][at];
                    } else {
                        let picked = &mut self.picked[tab];
                        let was = picked[at];
                        picked.iter_mut().for_each(|p| *p = false);
                        picked[at] = !was;
                    }
                }
                _ => {}
            }
        }
    }
}

impl Ui for TerminalUi {
    fn interactive(&self) -> bool {
        true
    }

    fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        let _one = self.lock.lock().unwrap();
        if let Some(diff) = request.diff {
            eprintln!("{}", inert(diff));
        }
        eprintln!("{} {}", "Allow".bold(), inert(request.header).into_owned().cyan());
        let options = ["Allow once", "Allow for this session", "Deny"].map(String::from);
        match select(&options, false).as_deref() {
            Some([0]) => Approval::Once,
            Some([1]) => Approval::Session,
            _ => Approval::Deny,
        }
    }

    fn choose(&self, questions: &[Question]) -> Option<Vec<Answer>> {
        let _one = self.lock.lock().unwrap();
        let _raw = RawMode::enter().ok()?;
        Surface::new(questions).run()
    }

    fn confirm(&self, question: &str, yes_label: &str, no_label: &str) -> Option<bool> {
        let _one = self.lock.lock().unwrap();
        eprintln!("{}", inert(question).into_owned().bold());
        match select(&[yes_label.to_string(), no_label.to_string()], false)?.as_slice() {
            [0] => Some(true),
            _ => Some(false),
        }
    }
}
