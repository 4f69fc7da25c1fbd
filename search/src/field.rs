//! The fields of a tool document that terms are indexed from.

/// The number of indexed fields.
pub const FIELDS: usize = 6;

/// A part of a tool document that terms are indexed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// The tool name, split into parts, plus the whole name.
    Name = 0,
    /// The description.
    Description = 1,
    /// Parameter (property) names, nested ones included.
    ParamName = 2,
    /// Parameter descriptions and `enum` values.
    ParamDescription = 3,
    /// Aliases, split like names.
    Alias = 4,
    /// Keywords.
    Keyword = 5,
}

impl Field {
    /// Every field, in index order.
    pub const ALL: [Field; FIELDS] = [
        Field::Name,
        Field::Description,
        Field::ParamName,
        Field::ParamDescription,
        Field::Alias,
        Field::Keyword,
    ];

    /// The field's name as written in explanations: `name`, `description`,
    /// `param_name`, `param_description`, `alias`, `keyword`.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Description => "description",
            Field::ParamName => "param_name",
            Field::ParamDescription => "param_description",
            Field::Alias => "alias",
            Field::Keyword => "keyword",
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
