//! Questions on a real terminal (crossterm): a selector drawn on stderr,
//! driven by the arrow keys, Space (multi-select), Enter and Esc.

use super::{Approval, ApprovalRequest, Ui};
use crate::caps::bindings::iota::toolset::ui::{Answer, Question};
use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::style::Stylize;
use crossterm::{cursor, execute, terminal};
use std::io::{BufRead, Write};
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
            let line = format!("{mark}{option}");
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

fn read_line(prompt: &str) -> Option<String> {
    eprint!("{prompt}");
    let mut line = String::new();
    let tty = std::fs::File::open("/dev/tty").ok()?;
    std::io::BufReader::new(tty).read_line(&mut line).ok()?;
    Some(line.trim_end_matches(['\n', '\r']).to_string())
}

impl Ui for TerminalUi {
    fn interactive(&self) -> bool {
        true
    }

    fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        let _one = self.lock.lock().unwrap();
        if let Some(diff) = request.diff {
            eprintln!("{diff}");
        }
        eprintln!("{} {}", "Allow".bold(), request.header.cyan());
        let options = ["Allow once", "Allow for this session", "Deny"].map(String::from);
        match select(&options, false).as_deref() {
            Some([0]) => Approval::Once,
            Some([1]) => Approval::Session,
            _ => Approval::Deny,
        }
    }

    fn choose(&self, questions: &[Question]) -> Option<Vec<Answer>> {
        let _one = self.lock.lock().unwrap();
        let mut answers = Vec::new();
        for question in questions {
            eprintln!(
                "{} {}",
                format!("[{}]", question.header).dim(),
                question.question.clone().bold()
            );
            let mut options: Vec<String> = question
                .choices
                .iter()
                .map(|c| match &c.description {
                    Some(d) => format!("{} — {d}", c.label),
                    None => c.label.clone(),
                })
                .collect();
            if question.allow_custom {
                options.push("Other…".to_string());
            }
            let picked = select(&options, question.multiple)?;
            let mut answer = Answer {
                selected: Vec::new(),
                custom: None,
            };
            for i in picked {
                match question.choices.get(i) {
                    Some(choice) => answer.selected.push(choice.label.clone()),
                    None => answer.custom = read_line("Other: ").filter(|s| !s.is_empty()),
                }
            }
            answers.push(answer);
        }
        Some(answers)
    }

    fn confirm(&self, question: &str, yes_label: &str, no_label: &str) -> Option<bool> {
        let _one = self.lock.lock().unwrap();
        eprintln!("{}", question.bold());
        match select(&[yes_label.to_string(), no_label.to_string()], false)?.as_slice() {
            [0] => Some(true),
            _ => Some(false),
        }
    }
}
